//go:build race

package engine

// raceEnabled reports a build with the race detector, under which
// sync.Pool drops a random quarter of what is put back, so allocation
// counts vary from run to run.
const raceEnabled = true
