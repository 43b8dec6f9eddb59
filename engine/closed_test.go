package engine_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"testing"

	"github.com/ebbdb/ebb/engine"
)

// answersAfterClose are the exported methods that keep answering normally
// after Close, as their doc comments say: Close itself (nil again), the
// container's own description (ID, Properties), and NewBatch, which only
// builds a value (ExecuteBatch then returns ErrClosed), as do
// Container.Partition and Partition.NewBatch; Partition.Key describes it.
var answersAfterClose = map[string]bool{"DB.Close": true, "Container.ID": true, "Container.Properties": true, "Container.NewBatch": true,
	"Container.Partition": true, "Partition.Key": true, "Partition.NewBatch": true}

// TestCallsAfterClose walks every exported method of DB and Container (by
// reflection, so that a method added later is covered too) on a closed DB.
// Each must return an error matching ErrClosed, or yield one first from an
// iterator, or, for a method without an error result, the zero value its
// doc comment promises; none may panic.
func TestCallsAfterClose(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), newFakeClock(t0))
	c := mustCreateContainer(t, db, engine.ContainerProperties{ID: "c", DefaultTTL: engine.TTL(60)})
	if _, err := c.Upsert(ctx, []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	methods := 0
	for _, recv := range []any{db, c, c.Partition(engine.NoneKey())} {
		rv := reflect.ValueOf(recv)
		rt := rv.Type()
		for i := range rt.NumMethod() {
			m := rt.Method(i)
			name := rt.Elem().Name() + "." + m.Name
			methods++
			t.Run(name, func(t *testing.T) {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panicked after Close: %v", p)
					}
				}()
				fn := rv.Method(i)
				out := fn.Call(closedArgs(m.Name, fn.Type()))
				if answersAfterClose[name] {
					return
				}
				checkClosedResults(t, out)
			})
		}
	}
	if methods < 15 {
		t.Fatalf("walked %d methods: the reflection found too few", methods)
	}
}

// closedArgs makes plausible arguments for a method of type ft.
func closedArgs(name string, ft reflect.Type) []reflect.Value {
	var args []reflect.Value
	for j := range ft.NumIn() {
		at := ft.In(j)
		if ft.IsVariadic() && j == ft.NumIn()-1 {
			break // no options
		}
		var v reflect.Value
		switch {
		case at == reflect.TypeFor[context.Context]():
			v = reflect.ValueOf(context.Background())
		case at.Kind() == reflect.String:
			v = reflect.ValueOf("a").Convert(at) // an id
			if name == "Query" || name == "Explain" {
				v = reflect.ValueOf("SELECT * FROM c")
			}
		case at == reflect.TypeFor[[]byte]():
			v = reflect.ValueOf([]byte(`{"id":"a"}`))
		case at == reflect.TypeFor[*engine.Batch]():
			v = reflect.ValueOf(new(engine.Batch).Upsert([]byte(`{"id":"b"}`)))
		case at == reflect.TypeFor[engine.ContainerProperties]():
			v = reflect.ValueOf(engine.ContainerProperties{ID: "c"})
		default:
			v = reflect.Zero(at)
		}
		args = append(args, v)
	}
	return args
}

func checkClosedResults(t *testing.T, out []reflect.Value) {
	t.Helper()
	errType := reflect.TypeFor[error]()
	for _, o := range out {
		switch {
		case o.Type() == errType:
			if err, _ := o.Interface().(error); !errors.Is(err, engine.ErrClosed) {
				t.Errorf("error %v, want ErrClosed", err)
			}
		case o.Type() == reflect.TypeFor[iter.Seq2[engine.Item, error]]():
			n := 0
			for _, err := range o.Interface().(iter.Seq2[engine.Item, error]) {
				n++
				if !errors.Is(err, engine.ErrClosed) {
					t.Errorf("iterator yielded error %v, want ErrClosed", err)
				}
			}
			if n != 1 {
				t.Errorf("iterator yielded %d times, want once (ErrClosed)", n)
			}
		case o.Type() == reflect.TypeFor[iter.Seq2[engine.Change, error]]():
			n := 0
			for _, err := range o.Interface().(iter.Seq2[engine.Change, error]) {
				n++
				if !errors.Is(err, engine.ErrClosed) {
					t.Errorf("change feed yielded error %v, want ErrClosed", err)
				}
			}
			if n != 1 {
				t.Errorf("change feed yielded %d times, want once (ErrClosed)", n)
			}
		case len(out) == 1 || out[len(out)-1].Type() != errType:
			// No error result: the documented zero value.
			if !o.IsZero() {
				t.Errorf("returned %s after Close, want its zero value", fmt.Sprint(o.Interface()))
			}
		}
	}
}
