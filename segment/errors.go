package segment

import "errors"

// ErrCorrupt is returned, wrapped with the file, offset and what failed to
// check, whenever bytes read back from disk do not match what was written:
// a checksum mismatch, a truncated block, an impossible length. It is the one
// corruption sentinel of ebb: the engine and the journal re-export it, so
// errors.Is(err, engine.ErrCorrupt) holds for damage found at any layer.
var ErrCorrupt = errors.New("ebb: corrupt data")
