// Package crashloop is ebb's crash loop: it runs a mixed workload in a
// child process, kills the child with SIGKILL at a random moment, reopens
// the database and checks it against the log of what the child was told
// was done, round after round on the same directory. It checks ebb's
// invariants across crashes, under a wall clock that jumps hours
// back and forward:
//
//   - no acknowledged write is lost: every item is in the state its last
//     acknowledged write left it (or a write in flight at the kill);
//   - no unacknowledged write is half visible: a batch in flight at the kill
//     is whole or absent, and every body is byte for byte the document of
//     the write it names, with its _ts and _etag;
//   - nothing expired or deleted comes back: visibility after the restart is
//     exactly "now < expiry" under the container's DefaultTTL history
//     (policy.History.ExpiresAt), including changes made during the round;
//   - the clock never runs backwards: every _ts lies
//     between the engine's now when its write started and the highest now
//     the clock steps allow, and the engine's now after a restart is at
//     least what the database certainly persisted, which includes the
//     expiry instant of every item an acknowledged read or refusal found
//     expired (so an item seen gone never comes back).
//
// # The child
//
// ChildMain (see protocol.go for its log) opens the database with small
// seal, journal and block thresholds, so that seals, journal rolls and
// background compactions happen many times a round, and runs:
//
//   - workers that create, upsert, replace and delete their own ids (with
//     and without IfMatch, singly and in transactional batches), write ids
//     shared with the other workers of their container, and read ids back;
//     documents carry item ttls that are absent, -1, hours, or seconds;
//   - a clock controller that moves Options.Clock in steps: seconds forward
//     mostly, with ClockFaults hours back or ahead for a few steps, or a
//     leap of hours; it makes the engine observe each step (by a probe
//     write, whose _ts must be exactly the previous now moved on by the
//     wall clock's forward move, if any, or a read)
//     before it reports the step done, and changes DefaultTTLs between
//     steps, so the checker knows the instant of every change; with
//     ClockFaults, one step of each round is a hold: with the workers and
//     Compact calls paused, the wall clock jumps ahead, observed by reads
//     alone, every own id is read (finding some expired) and nothing is
//     written for a while, in which the parent sometimes kills the child,
//     so that only the expiries those reads made durable keep the items
//     expired after the restart;
//   - Compact calls, and full scans that check every body.
//
// Every line is checked as it comes: the _ts of every acknowledged write,
// and for ids only one worker writes, the precondition of every write and
// refusal and the result of every read against the expiry model at the
// engine's now, which the steps bound from both sides.
//
// # The restart
//
// The parent reopens the database with a wall clock that may be hours
// behind or ahead of the child's, measures the engine's now with a probe
// write, checks it against the bounds the log sets (see verify.go), and
// reads every id back: Read, Items and Stats must agree, and each item must
// be in an allowed state at that now. Now and then it compacts every
// container and checks again. After the last round it restarts twice more
// and checks again. The state found becomes the model of the next round.
//
// The parent's choices (kill moments, clocks) follow Config.Seed; the
// child's threads interleave differently each run, so a seed replays a
// run's choices, not its exact operations. A violation carries the round's
// log lines about the item concerned, and the whole log is kept beside the
// database.
package crashloop
