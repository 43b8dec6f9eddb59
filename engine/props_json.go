package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/ebbdb/ebb/policy"
)

// propsJSON is ContainerProperties in Cosmos DB's JSON shape:
// {"id":"c","defaultTtl":3600,"indexingPolicy":{"indexingMode":"consistent"},
// "changeFeedPolicy":{"retentionDuration":1440}} (minutes),
// "partitionKey":{"paths":["/tenant"],"kind":"Hash","version":2}.
type propsJSON struct {
	ID               string            `json:"id"`
	DefaultTTL       json.RawMessage   `json:"defaultTtl,omitempty"`
	IndexingPolicy   *indexingJSON     `json:"indexingPolicy,omitempty"`
	ChangeFeedPolicy *changeFeedPolicy `json:"changeFeedPolicy,omitempty"`
	PartitionKey     *partitionKeyJSON `json:"partitionKey,omitempty"`
}

// partitionKeyJSON is Cosmos DB's partitionKey object (the partition key
// definition): {"paths":["/tenant"],"kind":"Hash","version":2}.
type partitionKeyJSON struct {
	Paths   []string `json:"paths"`
	Kind    string   `json:"kind,omitempty"`
	Version int      `json:"version,omitempty"`
}

// changeFeedPolicy is Cosmos DB's changeFeedPolicy object: the retention
// of all versions and deletes, in minutes.
type changeFeedPolicy struct {
	RetentionDuration json.Number `json:"retentionDuration"`
}

// maxRetentionMinutes is the longest retention a time.Duration holds.
const maxRetentionMinutes = int64(math.MaxInt64 / time.Minute)

// indexingJSON is Cosmos DB's indexingPolicy object.
type indexingJSON struct {
	IndexingMode  string     `json:"indexingMode"`
	IncludedPaths []pathJSON `json:"includedPaths,omitempty"`
	ExcludedPaths []pathJSON `json:"excludedPaths,omitempty"`
}

type pathJSON struct {
	Path string `json:"path"`
}

func toPathJSON(paths []string) []pathJSON {
	var out []pathJSON
	for _, p := range paths {
		out = append(out, pathJSON{p})
	}
	return out
}

func fromPathJSON(paths []pathJSON) []string {
	var out []string
	for _, p := range paths {
		out = append(out, p.Path)
	}
	return out
}

// MarshalJSON writes the properties in Cosmos DB's JSON shape.
func (p ContainerProperties) MarshalJSON() ([]byte, error) {
	var j propsJSON
	j.ID = p.ID
	if p.DefaultTTL != nil {
		j.DefaultTTL = json.RawMessage(fmt.Sprint(*p.DefaultTTL))
	}
	if r := p.ChangeFeedRetention; r > 0 {
		mins := int64((r + time.Minute - 1) / time.Minute) // whole minutes, rounded up
		if r > time.Duration(maxRetentionMinutes)*time.Minute {
			mins = maxRetentionMinutes
		}
		j.ChangeFeedPolicy = &changeFeedPolicy{RetentionDuration: json.Number(fmt.Sprint(mins))}
	}
	if p.PartitionKeyPath != "" {
		j.PartitionKey = &partitionKeyJSON{Paths: []string{p.PartitionKeyPath}, Kind: "Hash", Version: 2}
	}
	j.IndexingPolicy = &indexingJSON{
		IndexingMode:  p.Indexing.String(),
		IncludedPaths: toPathJSON(p.IncludedPaths),
		ExcludedPaths: toPathJSON(p.ExcludedPaths),
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads properties in Cosmos DB's JSON shape. A defaultTtl
// that is not -1 or an integer in 1..2147483647, or an unknown indexing
// mode, is an error wrapping ErrInvalidProperties.
func (p *ContainerProperties) UnmarshalJSON(b []byte) error {
	var j propsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidProperties, err)
	}
	out := ContainerProperties{ID: j.ID}
	if raw := bytes.TrimSpace(j.DefaultTTL); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("%w: defaultTtl %s is not a number", ErrInvalidProperties, raw)
		}
		v, err := n.Int64()
		if err != nil {
			return fmt.Errorf("%w: defaultTtl %s is not an integer", ErrInvalidProperties, raw)
		}
		if err := policy.ValidateDefaultTTL(v); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidProperties, err)
		}
		out.DefaultTTL = TTL(int32(v))
	}
	if j.ChangeFeedPolicy != nil {
		raw := j.ChangeFeedPolicy.RetentionDuration
		mins, err := raw.Int64()
		if err != nil || mins < 0 || mins > maxRetentionMinutes {
			return fmt.Errorf("%w: changeFeedPolicy.retentionDuration %q is not a whole number of minutes in 0..%d", ErrInvalidProperties, raw, maxRetentionMinutes)
		}
		out.ChangeFeedRetention = time.Duration(mins) * time.Minute
	}
	if j.IndexingPolicy != nil {
		switch j.IndexingPolicy.IndexingMode {
		case "", "consistent":
			out.Indexing = IndexingConsistent
		case "lazy":
			out.Indexing = IndexingLazy
		case "none":
			out.Indexing = IndexingNone
		default:
			return fmt.Errorf("%w: indexingMode %q is not consistent, lazy or none", ErrInvalidProperties, j.IndexingPolicy.IndexingMode)
		}
		out.IncludedPaths = fromPathJSON(j.IndexingPolicy.IncludedPaths)
		out.ExcludedPaths = fromPathJSON(j.IndexingPolicy.ExcludedPaths)
	}
	if pk := j.PartitionKey; pk != nil {
		switch {
		case len(pk.Paths) > 1 || pk.Kind == "MultiHash":
			return fmt.Errorf("%w: partitionKey %v: hierarchical partition keys (kind MultiHash, more than one path) are not supported", ErrInvalidProperties, pk.Paths)
		case pk.Kind != "" && pk.Kind != "Hash":
			return fmt.Errorf("%w: partitionKey kind %q is not Hash", ErrInvalidProperties, pk.Kind)
		case pk.Version != 0 && pk.Version != 1 && pk.Version != 2:
			return fmt.Errorf("%w: partitionKey version %d is not 1 or 2", ErrInvalidProperties, pk.Version)
		case len(pk.Paths) == 1:
			if pk.Paths[0] == "" {
				return fmt.Errorf("%w: partitionKey path is empty", ErrInvalidProperties)
			}
			if _, err := parseKeyPath(out.ID, pk.Paths[0]); err != nil {
				return err
			}
			out.PartitionKeyPath = pk.Paths[0]
		}
	}
	*p = out
	return nil
}
