// Package compactor is ebb's physical-deletion pass: it rewrites segment
// files without the records that are dead (expired, deleted or superseded)
// and lets the engine drop files whose records are all dead without reading
// them. It never decides what is dead: the engine's index does, through the
// keep function, so compaction can never change what a reader sees.
package compactor
