// Package tool reads an ebb database directory, or one of its files,
// without opening the database: Inspect reports what a directory holds,
// Verify checks every byte of it, and DumpFile decodes a segment or journal
// file record by record. They are the library behind the ebb command's
// inspect, verify and dump verbs.
//
// They take no lock, never write and open every file read-only (through
// vfs.OS, as the engine's files go through a vfs.FS), so they work on a
// directory that another process has open: they read a snapshot
// of it, taken again while it changes underneath (see Inspect). They
// stream, so their memory does not grow with a file's size, and they refuse
// a path that is not a regular file (a fifo, a device) or not ebb's.
//
// Their errors are those of package engine: engine.ErrNoDatabase for a
// directory that holds no ebb database, and errors wrapping
// engine.ErrCorrupt for damage that stops them; DumpFile adds
// ErrUnknownFile. Damage that Verify finds is reported, not returned.
// This package does not import engine, so that the engine's own tests
// can check what they leave on disk with Verify.
package tool

import "errors"

// ErrUnknownFile: the file given to DumpFile does not exist, is not a
// regular file, or is neither a segment file nor a journal file.
var ErrUnknownFile = errors.New("ebb: not a segment or journal file")
