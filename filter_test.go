package listen_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
)

// n is a JSON number as this package decodes it.
func n(s string) json.Number { return json.Number(s) }

func TestFilterSubsetOf(t *testing.T) {
	tests := []struct {
		name      string
		candidate listen.Filter
		supported listen.Filter
		want      bool
	}{
		{"list elements compare exactly: [1,x] in [x,1,2]", listen.Filter{"a": []any{n("1"), "x"}}, listen.Filter{"a": []any{"x", n("1"), n("2")}}, true},
		{"float 1.0 is not integer 1", listen.Filter{"a": []any{n("1.0")}}, listen.Filter{"a": []any{n("1")}}, false},
		{"Go float64 is not a JSON integer", listen.Filter{"a": []any{float64(1)}}, listen.Filter{"a": []any{1}}, false},
		{"Go int equals JSON integer literal", listen.Filter{"a": []any{int64(7)}}, listen.Filter{"a": []any{n("7")}}, true},
		{"1.0 equals 1.00 as floats", listen.Filter{"a": []any{n("1.0")}}, listen.Filter{"a": []any{n("1.00")}}, true},
		{"missing string", listen.Filter{"a": []any{"y"}}, listen.Filter{"a": []any{"x"}}, false},
		{"[]string against []any", listen.Filter{"a": []string{"x"}}, listen.Filter{"a": []any{"x", "y"}}, true},
		{"duplicates and order ignored", listen.Filter{"a": []any{"y", "x", "x"}}, listen.Filter{"a": []any{"x", "y"}}, true},
		{"empty filter is a subset of anything", listen.Filter{}, listen.Filter{"a": true}, true},
		{"empty filter is a subset of empty", listen.Filter{}, nil, true},
		{"extra supported keys are fine", listen.Filter{"toolsListChanged": true}, listen.Filter{"toolsListChanged": true, "b": 1}, true},
		{"false for an absent key overclaims", listen.Filter{"resourcesListChanged": false}, listen.Filter{"toolsListChanged": true}, false},
		{"true vs false", listen.Filter{"a": true}, listen.Filter{"a": false}, false},
		{"nested objects recurse", listen.Filter{"a": map[string]any{"b": []any{"x"}}}, listen.Filter{"a": map[string]any{"b": []any{"x", "z"}, "c": 1}}, true},
		{"nested object missing key", listen.Filter{"a": map[string]any{"c": 1}}, listen.Filter{"a": map[string]any{"b": 1}}, false},
		{"list vs scalar", listen.Filter{"a": []any{"x"}}, listen.Filter{"a": "x"}, false},
		{"scalar vs list", listen.Filter{"a": "x"}, listen.Filter{"a": []any{"x"}}, false},
		{"lists of objects", listen.Filter{"a": []any{map[string]any{"k": n("1")}}}, listen.Filter{"a": []any{map[string]any{"k": n("1")}, "z"}}, true},
		{"lists of objects differ by number type", listen.Filter{"a": []any{map[string]any{"k": n("1")}}}, listen.Filter{"a": []any{map[string]any{"k": n("1.0")}}}, false},
		{"invalid candidate is never a subset", listen.Filter{"a": make(chan int)}, listen.Filter{"a": true}, false},
		{"NaN is not JSON", listen.Filter{"a": math.NaN()}, listen.Filter{"a": math.NaN()}, false},
		{"null equals null", listen.Filter{"a": nil}, listen.Filter{"a": nil}, true},
		{"large list uses the hash path", listen.Filter{"a": []any{"u9", "u1", n("3")}}, listen.Filter{"a": []any{"u0", "u1", "u2", n("3"), "u4", "u5", "u6", "u7", "u8", "u9"}}, true},
		{"large list hash path is exact", listen.Filter{"a": []any{n("3.0")}}, listen.Filter{"a": []any{"u0", "u1", "u2", n("3"), "u4", "u5", "u6", "u7", "u8", "u9"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, listen.SubsetOf(tt.candidate, tt.supported))
		})
	}
}

func TestFilterValid(t *testing.T) {
	tests := []struct {
		name string
		f    listen.Filter
		want bool
	}{
		{"nil", nil, true},
		{"scalars", listen.Filter{"a": true, "b": "s", "c": n("1.5"), "d": nil, "e": 3, "f": 2.5, "g": uint8(1)}, true},
		{"nested", listen.Filter{"a": []any{map[string]any{"b": []string{"x"}}}}, true},
		{"channel", listen.Filter{"a": make(chan int)}, false},
		{"struct", listen.Filter{"a": struct{}{}}, false},
		{"nested func", listen.Filter{"a": []any{func() {}}}, false},
		{"bad number literal", listen.Filter{"a": n("01")}, false},
		{"infinity", listen.Filter{"a": math.Inf(1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, listen.FilterValid(tt.f)) })
	}
}

func TestMergeReportsSortedCollisions(t *testing.T) {
	got, err := listen.Merge(listen.Filter{"a": 1}, listen.Filter{"b": 2})
	require.NoError(t, err)
	assert.Equal(t, listen.Filter{"a": 1, "b": 2}, got)

	_, err = listen.Merge(listen.Filter{"z": 1, "b": 1, "a": 1}, listen.Filter{"z": 2, "a": 2, "c": 2})
	var ce *listen.CollisionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"a", "z"}, ce.Keys)
}

func TestProjectDropsWholeEntries(t *testing.T) {
	got := listen.Project(listen.Filter{"a": []any{"x"}, "b": true}, listen.Filter{"a": []any{"x", "z"}})
	assert.Equal(t, listen.Filter{"a": []any{"x"}}, got)

	got = listen.Project(listen.Filter{"a": []any{"x", "q"}, "b": true}, listen.Filter{"a": []any{"x"}, "b": true})
	assert.Equal(t, listen.Filter{"b": true}, got, "an entry that is not contained is dropped, not intersected")
}

func TestFilterCloneDetachesStrings(t *testing.T) {
	body := []byte(`{"resourceSubscriptions":["file:///a"],"taskIds":["t1"],"nested":{"k":"v"}}`)
	var f listen.Filter
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&f))
	c := listen.Clone(f)
	require.Equal(t, f, c)
	uri := listen.Strings(c, "resourceSubscriptions")[0]
	orig := listen.Strings(f, "resourceSubscriptions")[0]
	assert.True(t, unsafe.StringData(orig) != unsafe.StringData(uri), "clone shares string memory")
}

func TestFilterMarshalJSON(t *testing.T) {
	f := listen.Filter{"b": []string{"x<y"}, "a": n("1.0"), "c": 1.0, "d": []any(nil), "e": map[string]any(nil), "f": 2}
	b, err := f.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"a":1.0,"b":["x<y"],"c":1.0,"d":[],"e":{},"f":2}`, string(b))

	_, err = json.Marshal(listen.Filter{"a": make(chan int)})
	assert.Error(t, err)
}

// The reference requires 50,000 URIs checked against the same list reversed
// to finish quickly; a quadratic check takes seconds. This asserts only the
// answer: the time is measured by BenchmarkSubset50000.
func TestSubsetOfLargeLists(t *testing.T) {
	uris := make([]any, 50_000)
	for i := range uris {
		uris[i] = fmt.Sprintf("file:///r/%d", i)
	}
	rev := slices.Clone(uris)
	slices.Reverse(rev)
	assert.True(t, listen.SubsetOf(listen.Filter{"resourceSubscriptions": uris}, listen.Filter{"resourceSubscriptions": rev}))
	rev[0] = "file:///other"
	assert.False(t, listen.SubsetOf(listen.Filter{"resourceSubscriptions": uris}, listen.Filter{"resourceSubscriptions": rev}))
}

func BenchmarkSubset50000(b *testing.B) {
	uris := make([]any, 50_000)
	for i := range uris {
		uris[i] = fmt.Sprintf("file:///r/%d", i)
	}
	rev := slices.Clone(uris)
	slices.Reverse(rev)
	cand, sup := listen.Filter{"resourceSubscriptions": uris}, listen.Filter{"resourceSubscriptions": rev}
	b.ReportAllocs()
	for b.Loop() {
		if !listen.SubsetOf(cand, sup) {
			b.Fatal("not a subset")
		}
	}
}

// naiveSubset is the reference implementation the fuzz target compares
// against: quadratic, written straight from the definition over values
// decoded from JSON with UseNumber.
func naiveSubset(a, b any) bool {
	switch av := a.(type) {
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return false
		}
		for _, x := range av {
			if !slices.ContainsFunc(bv, func(y any) bool { return naiveEqual(x, y) }) {
				return false
			}
		}
		return true
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !naiveSubset(x, y) {
				return false
			}
		}
		return true
	}
	switch b.(type) {
	case []any, map[string]any:
		return false
	}
	return naiveEqual(a, b)
}

// naiveEqual is exact JSON equality: same type and value; integer literals
// compare as text, float literals as float64 values; lists element-wise;
// objects key-wise.
func naiveEqual(a, b any) bool {
	switch av := a.(type) {
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok {
			return false
		}
		ai := !strings.ContainsAny(string(av), ".eE")
		bi := !strings.ContainsAny(string(bv), ".eE")
		if ai != bi {
			return false
		}
		if ai {
			return strings.TrimPrefix(string(av), "-") == strings.TrimPrefix(string(bv), "-") &&
				(strings.HasPrefix(string(av), "-") == strings.HasPrefix(string(bv), "-") || strings.Trim(string(av), "-0") == "")
		}
		af, err1 := av.Float64()
		bf, err2 := bv.Float64()
		if err1 != nil || err2 != nil {
			return string(av) == string(bv)
		}
		return af == bf
	case []any:
		bv, ok := b.([]any)
		return ok && slices.EqualFunc(av, bv, naiveEqual)
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !naiveEqual(x, y) {
				return false
			}
		}
		return true
	}
	return a == b
}

func decodeFilter(data []byte) (listen.Filter, bool) {
	var f map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&f) != nil || f == nil {
		return nil, false
	}
	return listen.Filter(f), true
}

// FuzzFilterOps checks SubsetOf, Merge and Project against the naive
// reference over filters decoded from arbitrary JSON.
func FuzzFilterOps(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x"]}`), []byte(`{"a":["x",1,2]}`))
	f.Add([]byte(`{"a":[1.0]}`), []byte(`{"a":[1]}`))
	f.Add([]byte(`{"a":{"b":[true,null]},"c":false}`), []byte(`{"a":{"b":[null,true,1e3]},"c":false}`))
	f.Add([]byte(`{"a":[-0,0.0,1e0]}`), []byte(`{"a":[0,1,"1"]}`))
	f.Add([]byte(`{"a":["u1","u2","u3","u4","u5","u6","u7","u8","u9",[1]]}`), []byte(`{"a":["u9","u8","u7","u6","u5","u4","u3","u2","u1",[1],2]}`))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		a, ok1 := decodeFilter(x)
		b, ok2 := decodeFilter(y)
		if !ok1 || !ok2 {
			return
		}
		if got, want := listen.SubsetOf(a, b), naiveSubset(map[string]any(a), map[string]any(b)); got != want {
			t.Fatalf("SubsetOf(%s, %s) = %v, naive %v", x, y, got, want)
		}
		m, err := listen.Merge(a, b)
		var collide []string
		for k := range b {
			if _, ok := a[k]; ok {
				collide = append(collide, k)
			}
		}
		slices.Sort(collide)
		if len(collide) > 0 {
			var ce *listen.CollisionError
			if !assert.ErrorAs(t, err, &ce) || !slices.Equal(ce.Keys, collide) {
				t.Fatalf("Merge collision keys: %v, want %v", err, collide)
			}
		} else if err != nil || len(m) != len(a)+len(b) {
			t.Fatalf("Merge = %v, %v", m, err)
		}
		p := listen.Project(a, b)
		for k, v := range a {
			_, inP := p[k]
			bv, inB := b[k]
			if want := inB && naiveSubset(v, bv); inP != want {
				t.Fatalf("Project key %q kept=%v want %v", k, inP, want)
			}
		}
		if !listen.SubsetOf(p, a) {
			t.Fatalf("projection is not a subset of accepted")
		}
		enc, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, ok := decodeFilter(enc)
		if !ok || !listen.SubsetOf(back, a) || !listen.SubsetOf(a, back) {
			t.Fatalf("round trip changed the filter: %s -> %s", x, enc)
		}
	})
}

func TestCapabilitiesFrom(t *testing.T) {
	type serverCaps struct {
		Extensions map[string]any `json:"extensions,omitempty"`
		Logging    *struct{}      `json:"logging,omitempty"`
		Resources  *struct {
			ListChanged bool `json:"listChanged,omitempty"`
			Subscribe   bool `json:"subscribe,omitempty"`
		} `json:"resources,omitempty"`
		Tools *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"tools,omitempty"`
	}
	var sc serverCaps
	sc.Logging = &struct{}{}
	sc.Tools = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true}
	sc.Resources = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
		Subscribe   bool `json:"subscribe,omitempty"`
	}{Subscribe: true}
	sc.Extensions = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	want := listen.Capabilities{
		ToolsListChanged:   true,
		ResourcesSubscribe: true,
		Extensions:         map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
	}
	doc := ` {"tools":{"listChanged":true},"resources":{"subscribe":true},"logging":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	for _, v := range []any{&sc, sc, json.RawMessage(doc), []byte(doc), doc} {
		c, err := listen.CapabilitiesFrom(v)
		require.NoError(t, err)
		assert.Equal(t, want, c)
	}

	// Only the boolean true counts.
	c, err := listen.CapabilitiesFrom(`{"tools":{"listChanged":"true"},"prompts":{"listChanged":1},"resources":{"listChanged":true,"subscribe":false}}`)
	require.NoError(t, err)
	assert.Equal(t, listen.Capabilities{ResourcesListChanged: true}, c)

	for _, v := range []any{nil, (*serverCaps)(nil), "null"} {
		c, err := listen.CapabilitiesFrom(v)
		require.NoError(t, err)
		assert.Equal(t, listen.Capabilities{}, c)
	}
	for _, v := range []any{"tools", []string{"tools"}, make(chan int), `{"tools":`} {
		_, err := listen.CapabilitiesFrom(v)
		assert.Error(t, err, "%v", v)
	}
}
