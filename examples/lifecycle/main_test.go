package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Example runs the program and checks its output: every step of one stream
// driven by hand, the server's End reaching it while the source waits, and
// nothing left running.
func Example() {
	main()
	// Output:
	// source: open for request "listen-1", supported filter {"resourceSubscriptions":["file:///project/config.json"],"toolsListChanged":true}
	// wire:   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"},"notifications":{"resourceSubscriptions":["file:///project/config.json"],"toolsListChanged":true}}}
	// source: next -> tools_list_changed
	// wire:   {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}}
	// source: next -> prompts_list_changed
	// owner:  prompts_list_changed dropped (not asked for)
	// source: next -> resource_updated file:///project/config.json
	// wire:   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"com.example/seq":1,"io.modelcontextprotocol/subscriptionId":"listen-1"},"uri":"file:///project/config.json"}}
	// source: next -> resource_updated file:///elsewhere.txt
	// owner:  resource_updated dropped (not asked for)
	// source: next -> waiting for a change
	// server: access revoked
	// owner:  end of stream: listen: access revoked
	// wire:   {"jsonrpc":"2.0","id":"listen-1","result":{"_meta":{"io.github.mcplisten/endReason":"revoked","io.modelcontextprotocol/serverInfo":{"name":"lifecycle-example","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"listen-1"},"resultType":"complete"}}
	// source: close (revoked)
	// done:   closed with "listen: access revoked" (revoked)
}
