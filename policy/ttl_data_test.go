package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestTTLData runs the TTL edge cases of testdata/ttl; -rewrite regenerates
// the answers. The commands:
//
//	effective [default=<off|n>] [ttl=<n>]
//	    Effective: the effective ttl in seconds, or "never". The values are
//	    taken as they are, unvalidated (an absent default is "off", an
//	    absent ttl is 0: no ttl property).
//	expired at=<t|never> now=<t>|now=(<t>, ...)
//	    Expired: true or false (with several instants, "<now>: <bool>" each).
//	expiry ts=<t> [ttl=<json>] [default=<off|n>]
//	    The expiry instant of an item written at ts, or "never", or the
//	    error. ttl is the raw JSON of the item's ttl property (absent: none)
//	    and goes through ParseItemTTL; default is the container's DefaultTTL,
//	    set at the write, and goes through ValidateDefaultTTL. Instead of
//	    default, the input may give the container's whole history, one
//	    change a line: "at=<t> default=<off|n>" (none: TTL off).
//	parse-ttl [quoted]
//	    ParseItemTTL of each input line, the raw JSON text of an item's ttl
//	    property (with quoted, each line is a Go string literal, for text
//	    with edge spaces, control characters or invalid UTF-8): the value or
//	    the error, "<line> -> <answer>".
//	default-ttl
//	    ValidateDefaultTTL of each input line, an integer: "ok" or the error.
//
// Beyond the text, the runner checks what errors wrap and that the answers
// agree with each other (see checkTTLWraps, checkExpiry).
func TestTTLData(t *testing.T) {
	datadriven.RunTest(t, "testdata/ttl", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "effective":
			var def *int32
			var item int32
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "default":
					def = ddDefault(t, d, a.SingleVal(t))
				case "ttl":
					item = int32(ddInt(t, d, a.SingleVal(t), 32))
				default:
					d.Fatalf(t, "unknown argument %s", a)
				}
			}
			if eff, finite := Effective(def, item); finite {
				return fmt.Sprintln(eff)
			}
			return "never\n"

		case "expired":
			var at string
			d.ScanArgs(t, "at", &at)
			exp := int64(Never)
			if at != "never" {
				exp = ddInt(t, d, at, 64)
			}
			arg, _ := d.Arg("now")
			var b strings.Builder
			for _, v := range arg.Vals {
				got := Expired(exp, ddInt(t, d, v, 64))
				if len(arg.Vals) == 1 {
					return fmt.Sprintln(got)
				}
				fmt.Fprintf(&b, "%s: %v\n", v, got)
			}
			if b.Len() == 0 {
				d.Fatalf(t, "expired needs now=<t>")
			}
			return b.String()

		case "expiry":
			return ddExpiry(t, d)

		case "parse-ttl":
			var b strings.Builder
			for _, line := range strings.Split(d.Input, "\n") {
				raw := line
				if d.HasArg("quoted") {
					var err error
					if raw, err = strconv.Unquote(line); err != nil {
						d.Fatalf(t, "%s: not a Go string literal: %v", line, err)
					}
				} else if strings.TrimSpace(line) != line || line == "" {
					d.Fatalf(t, "%q: write a value with edge spaces, or none, under parse-ttl quoted", line)
				}
				v, err := ParseItemTTL([]byte(raw))
				if err != nil {
					checkTTLWraps(t, err, FieldTTL, raw)
					fmt.Fprintf(&b, "%s -> error: %v\n", line, err)
				} else {
					fmt.Fprintf(&b, "%s -> %d\n", line, v)
				}
			}
			return b.String()

		case "default-ttl":
			var b strings.Builder
			for _, line := range strings.Split(d.Input, "\n") {
				v := ddInt(t, d, line, 64)
				if err := ValidateDefaultTTL(v); err != nil {
					checkTTLWraps(t, err, FieldDefaultTTL, line)
					fmt.Fprintf(&b, "%s -> error: %v\n", line, err)
				} else {
					fmt.Fprintf(&b, "%s -> ok\n", line)
				}
			}
			return b.String()
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

// ddExpiry runs an "expiry" case.
func ddExpiry(t *testing.T, d *datadriven.TestData) string {
	var ts int64
	d.ScanArgs(t, "ts", &ts)
	var item int32
	if a, ok := d.Arg("ttl"); ok {
		v, err := ParseItemTTL([]byte(a.SingleVal(t)))
		if err != nil {
			checkTTLWraps(t, err, FieldTTL, a.SingleVal(t))
			return fmt.Sprintf("error: %v\n", err)
		}
		item = v
	}
	var h History
	single := false
	if a, ok := d.Arg("default"); ok {
		if d.Input != "" {
			d.Fatalf(t, "give default= or a history, not both")
		}
		single = true
		var def *int32
		if v := a.SingleVal(t); v != "off" {
			n := ddInt(t, d, v, 64)
			if err := ValidateDefaultTTL(n); err != nil {
				checkTTLWraps(t, err, FieldDefaultTTL, v)
				return fmt.Sprintf("error: %v\n", err)
			}
			def = ttl(int32(n))
		}
		h = History{{At: ts, DefaultTTL: def}}
	} else if d.Input != "" {
		for _, line := range strings.Split(d.Input, "\n") {
			var c Change
			for _, f := range strings.Fields(line) {
				switch k, v, _ := strings.Cut(f, "="); k {
				case "at":
					c.At = ddInt(t, d, v, 64)
				case "default":
					c.DefaultTTL = ddDefault(t, d, v)
				default:
					d.Fatalf(t, "history line %q: want at=<t> default=<off|n>", line)
				}
			}
			h = append(h, c)
		}
		if err := h.Validate(); err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
	}
	exp := h.ExpiresAt(ts, item)
	checkExpiry(t, d, h, ts, item, exp, single)
	if exp == Never {
		return "never\n"
	}
	return fmt.Sprintln(exp)
}

// checkExpiry checks what an expiry answer implies: the item is not
// expired a second before its instant, is from it on, and on a single
// DefaultTTL the instant is Effective applied to _ts.
func checkExpiry(t *testing.T, d *datadriven.TestData, h History, ts int64, item int32, exp int64, single bool) {
	t.Helper()
	if exp != Never && exp-1 >= ts && Expired(exp, exp-1) {
		d.Fatalf(t, "expired one second early")
	}
	if exp != Never && !Expired(exp, exp) {
		d.Fatalf(t, "not expired at its expiry instant %d", exp)
	}
	if single {
		eff, finite := Effective(h[0].DefaultTTL, item)
		if want := addExpiry(ts, eff); !finite && exp != Never || finite && exp != want {
			d.Fatalf(t, "ExpiresAt = %d disagrees with Effective = %d, %v", exp, eff, finite)
		}
	}
}

// ddDefault reads a DefaultTTL argument: "off" (nil) or an int32, taken as
// it is.
func ddDefault(t *testing.T, d *datadriven.TestData, v string) *int32 {
	if v == "off" {
		return nil
	}
	return ttl(int32(ddInt(t, d, v, 32)))
}

func ddInt(t *testing.T, d *datadriven.TestData, v string, bits int) int64 {
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return n
}

// checkTTLWraps checks what an error's text does not show: it is an
// *InvalidTTLError for field and wraps that field's sentinel, not the
// other's.
func checkTTLWraps(t *testing.T, err error, field, raw string) {
	t.Helper()
	var te *InvalidTTLError
	if !errors.As(err, &te) || te.Field != field {
		t.Errorf("%s %q: error %q is not an *InvalidTTLError for %q", field, raw, err, field)
	}
	want, other := ErrInvalidTTL, ErrInvalidDefaultTTL
	if field == FieldDefaultTTL {
		want, other = other, want
	}
	if !errors.Is(err, want) || errors.Is(err, other) {
		t.Errorf("%s %q: error %q wraps the wrong sentinel", field, raw, err)
	}
}
