package engine

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/ebbdb/ebb/engine/query"
)

// parsedQueries is how many query texts a DB keeps parsed. An application
// runs a handful of query texts with changing parameters; parsing one
// costs about as much as reading a few items.
const parsedQueries = 256

// newParseCache returns the DB's cache of parsed query texts. A parsed
// query is immutable (Bind makes a new Bound each time), so one is shared
// by every run of its text, concurrent ones included.
func newParseCache() *lru.Cache[string, *query.Query] {
	c, _ := lru.New[string, *query.Query](parsedQueries) // errors only for a size <= 0
	return c
}

// parse returns sql parsed, from the DB's cache when it was parsed before.
// Texts that fail to parse are not kept: they fail again, with the same
// error.
func (db *DB) parse(ctx context.Context, sql string) (*query.Query, error) {
	if q, ok := db.parsed.Get(sql); ok {
		return q, ctx.Err()
	}
	q, err := query.ParseContext(ctx, sql)
	if err == nil {
		db.parsed.Add(sql, q)
	}
	return q, err
}
