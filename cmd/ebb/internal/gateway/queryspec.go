package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/query"
)

// querySpec is the body of a query request.
type querySpec struct {
	Query      string       `json:"query"`
	Parameters []queryParam `json:"parameters"`
}

type queryParam struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// readQuery reads a query body; a GET (read feed) is "SELECT * FROM root".
func (q *request) readQuery() (querySpec, *apiError) {
	if q.r.Method == http.MethodGet {
		return querySpec{Query: "SELECT * FROM root"}, nil
	}
	var spec querySpec
	if aerr := q.jsonBody(&spec); aerr != nil {
		return spec, aerr
	}
	if spec.Query == "" {
		return spec, errorf(http.StatusBadRequest, "the query body has no \"query\"")
	}
	return spec, nil
}

// bind parses and binds the query with its parameters for evaluation
// here (over databases, containers, documents being patched).
func (spec querySpec) bind() (*query.Bound, error) {
	pq, err := query.Parse(spec.Query)
	if err != nil {
		return nil, err
	}
	params := map[string]query.Value{}
	for _, p := range spec.Parameters {
		raw := p.Value
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		v, err := query.Decode(raw)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "parameter %q: %v", p.Name, err)
		}
		if _, dup := params[p.Name]; dup {
			return nil, errorf(http.StatusBadRequest, "parameter %q is given twice", p.Name)
		}
		params[p.Name] = v
	}
	return pq.Bind(params)
}

// engineParams are the parameters for engine queries.
func (spec querySpec) engineParams() []engine.Param {
	out := make([]engine.Param, 0, len(spec.Parameters))
	for _, p := range spec.Parameters {
		raw := p.Value
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		out = append(out, engine.Param{Name: p.Name, Value: raw})
	}
	return out
}

// runOver runs spec over docs (JSON objects) and returns the results as
// JSON.
func runOver(spec querySpec, docs [][]byte) ([]json.RawMessage, *apiError) {
	b, err := spec.bind()
	if err != nil {
		return nil, fromEngine(err)
	}
	vals := make([]query.Value, 0, len(docs))
	for _, d := range docs {
		v, err := query.Decode(d)
		if err != nil {
			return nil, errorf(http.StatusInternalServerError, "decode a resource: %v", err)
		}
		vals = append(vals, v)
	}
	var out []json.RawMessage
	for _, v := range b.Run(vals) {
		out = append(out, v.AppendJSON(nil))
	}
	return out, nil
}
