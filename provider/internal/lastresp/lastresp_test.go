package lastresp

import (
	"fmt"
	"sync"
	"testing"
)

func TestTable(t *testing.T) {
	var tab Table
	if _, ok := tab.Get("a"); ok {
		t.Fatal("empty table found a thread")
	}
	tab.Set("a", "msg_1")
	tab.Set("a", "msg_2")
	tab.Set("", "msg_3")
	tab.Set("b", "")
	if id, ok := tab.Get("a"); !ok || id != "msg_2" {
		t.Fatalf("Get(a) = %q, %v", id, ok)
	}
	if tab.Len() != 1 {
		t.Fatalf("Len = %d, want 1 (empty thread and id are not kept)", tab.Len())
	}
}

func TestTableBounded(t *testing.T) {
	tab := Table{Max: 3}
	for i := range 10 {
		tab.Set(fmt.Sprint("t", i), fmt.Sprint("msg_", i))
	}
	if tab.Len() != 3 {
		t.Fatalf("Len = %d, want 3", tab.Len())
	}
	// The newest thread is always kept.
	if id, ok := tab.Get("t9"); !ok || id != "msg_9" {
		t.Fatalf("Get(t9) = %q, %v", id, ok)
	}
	// Updating a kept thread evicts nothing.
	tab.Set("t9", "msg_10")
	if tab.Len() != 3 {
		t.Fatalf("Len after update = %d", tab.Len())
	}
}

func TestTableConcurrent(t *testing.T) {
	var tab Table
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				th := fmt.Sprint("t", g, "-", i%7)
				tab.Set(th, fmt.Sprint(i))
				tab.Get(th)
			}
		}()
	}
	wg.Wait()
	if tab.Len() != 8*7 {
		t.Fatalf("Len = %d, want %d", tab.Len(), 8*7)
	}
}
