package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Example runs the program and checks its output: three subscriptions on
// one hub, what each receives and does not, an overflow on a client that
// stopped reading, and Shutdown.
func Example() {
	main()
	// Output:
	// publish tools/list_changed               matched=2 dropped=0
	// publish resources/updated todo.md        matched=1 dropped=0
	// publish prompts/list_changed             matched=1 dropped=0
	// publish tasks/status t-42                matched=1 dropped=0
	// publish tasks/status t-7                 matched=0 dropped=0
	// publish resources/updated build.log #1   matched=1 dropped=0
	// publish resources/updated build.log #2   matched=1 dropped=0
	// level=WARN msg="subscription hub overflow" dropped=1 queued=1 event_kind=resource_updated policy=drop_oldest
	// publish resources/updated build.log #3   matched=1 dropped=1
	// level=INFO msg="subscription hub shutdown" subscriptions=3 queued=1
	//
	// alpha (ended: complete)
	//   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"alpha"},"notifications":{"promptsListChanged":true,"toolsListChanged":true}}}
	//   {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"alpha"}}}
	//   {"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"alpha"}}}
	//   {"jsonrpc":"2.0","id":"alpha","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-hub","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"alpha"},"resultType":"complete"}}
	//
	// beta (ended: complete)
	//   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"beta"},"notifications":{"resourceSubscriptions":["file:///notes/todo.md"],"taskIds":["t-42"]}}}
	//   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"beta"},"uri":"file:///notes/todo.md"}}
	//   {"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"beta"},"status":"completed","taskId":"t-42"}}
	//   {"jsonrpc":"2.0","id":"beta","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-hub","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"beta"},"resultType":"complete"}}
	//
	// slow (ended: complete)
	//   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"slow"},"notifications":{"resourceSubscriptions":["file:///logs/build.log"],"toolsListChanged":true}}}
	//   {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"slow"}}}
	//   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"build":2,"io.modelcontextprotocol/subscriptionId":"slow"},"uri":"file:///logs/build.log"}}
	//   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"build":3,"io.modelcontextprotocol/subscriptionId":"slow"},"uri":"file:///logs/build.log"}}
	//   {"jsonrpc":"2.0","id":"slow","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-hub","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"slow"},"resultType":"complete"}}
	//
	// stats: subscriptions=0 queued=0 dropped=1
}
