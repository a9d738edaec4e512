package mcpgo

// SurrogateEveryID makes h send every request with an id to mcp-go under a
// surrogate, as it does when the start-up probe finds that mcp-go does not
// answer plain ids as sent. Call it before h serves.
func SurrogateEveryID(h *Handler) { h.plainIDs = false }
