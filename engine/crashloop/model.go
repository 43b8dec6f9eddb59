package crashloop

import (
	"github.com/ebbdb/ebb/engine/internal/testdoc"
	"github.com/ebbdb/ebb/policy"
)

// itemState is what an item is: absent, or the version written by W at TS
// with ETag (ETag "" when the checker does not know it). It is the model
// the engine's own crash and damage tests use too.
type itemState = testdoc.State

// contModel is what the checker knows of a container after a check.
type contModel struct {
	exists   bool
	history  policy.History
	items    map[string]itemState // the present items found
	universe map[string]bool      // every id ever written
}

// model is what the checker knows of the database after a check: exact,
// since every check reads the whole state back.
type model struct {
	conts map[string]*contModel
	// now is the engine's now at the last check, which its clean Close
	// persisted: no later now may be below it.
	now int64
}

func newModel() *model {
	m := &model{conts: make(map[string]*contModel)}
	for _, name := range allContainers {
		m.conts[name] = &contModel{items: map[string]itemState{}, universe: map[string]bool{}}
	}
	return m
}

// creationHistory is the policy history of a container just created. Its
// instant does not matter: every write comes after it.
func creationHistory(cont string) policy.History {
	return policy.History{}.With(0, defaultTTLOf(cont))
}
