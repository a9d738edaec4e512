package jsonobj

// Valid reports whether b is valid JSON exactly as encoding/json's Valid
// does (its grammar; bytes of invalid UTF-8 inside strings allowed; at most
// 10,000 levels of nesting), several times faster on the long strings of a
// listen request (runs of plain string bytes are skipped through a table).
func Valid(b []byte) bool {
	v := validator{b: b}
	v.i = skipSpace(b, 0)
	if !v.value(0) {
		return false
	}
	return skipSpace(b, v.i) == len(b)
}

type validator struct {
	b []byte
	i int
}

// stringByte[c] is true for a byte that stands for itself inside a JSON
// string: not a quote, a backslash or a control character.
var stringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (v *validator) value(depth int) bool {
	b := v.b
	if v.i >= len(b) {
		return false
	}
	switch c := b[v.i]; c {
	case '{':
		if depth++; depth > maxDecodeDepth {
			return false
		}
		v.i = skipSpace(b, v.i+1)
		if v.i < len(b) && b[v.i] == '}' {
			v.i++
			return true
		}
		for {
			if v.i >= len(b) || b[v.i] != '"' || !v.string() {
				return false
			}
			v.i = skipSpace(b, v.i)
			if v.i >= len(b) || b[v.i] != ':' {
				return false
			}
			v.i = skipSpace(b, v.i+1)
			if !v.value(depth) {
				return false
			}
			v.i = skipSpace(b, v.i)
			if v.i >= len(b) {
				return false
			}
			switch b[v.i] {
			case ',':
				v.i = skipSpace(b, v.i+1)
			case '}':
				v.i++
				return true
			default:
				return false
			}
		}
	case '[':
		if depth++; depth > maxDecodeDepth {
			return false
		}
		v.i = skipSpace(b, v.i+1)
		if v.i < len(b) && b[v.i] == ']' {
			v.i++
			return true
		}
		for {
			if !v.value(depth) {
				return false
			}
			v.i = skipSpace(b, v.i)
			if v.i >= len(b) {
				return false
			}
			switch b[v.i] {
			case ',':
				v.i = skipSpace(b, v.i+1)
			case ']':
				v.i++
				return true
			default:
				return false
			}
		}
	case '"':
		return v.string()
	case 't':
		return v.literal("true")
	case 'f':
		return v.literal("false")
	case 'n':
		return v.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return v.number()
		}
		return false
	}
}

// string checks the string token at v.i (a quote) and moves past it.
func (v *validator) string() bool {
	b := v.b
	i := v.i + 1
	for {
		for i+8 <= len(b) && stringByte[b[i]] && stringByte[b[i+1]] && stringByte[b[i+2]] && stringByte[b[i+3]] &&
			stringByte[b[i+4]] && stringByte[b[i+5]] && stringByte[b[i+6]] && stringByte[b[i+7]] {
			i += 8
		}
		for i < len(b) && stringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"':
			v.i = i + 1
			return true
		case '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

func (v *validator) literal(word string) bool {
	if len(v.b)-v.i < len(word) || string(v.b[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

// number checks the number at v.i: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) number() bool {
	b, i := v.b, v.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	v.i = i
	return true
}

// validNumber reports whether tok is exactly one JSON number.
func validNumber(tok []byte) bool {
	if len(tok) == 0 || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9')) {
		return false
	}
	v := validator{b: tok}
	return v.number() && v.i == len(tok)
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
