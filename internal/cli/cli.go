// Package cli is what every seckill command shares about its command
// line: one form of help (what the command does, its flags with their
// defaults, the settings it reads from the environment) and one meaning
// for each way a command ends, decided in Exit. -h or --help prints the
// help on stdout and exits 0; a wrong command line (a flag the command
// does not have, a bad flag value, an unknown subcommand) prints the error
// and the usage on stderr and exits 2, as Go's flag package does; any
// other error exits 1.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Var is an environment variable a command reads.
type Var struct {
	Name string
	// Default is what an unset Name means, as the help shows it ("":
	// nothing, or nothing short enough to show).
	Default string
}

// Help is a command's help, less its flags: those come from its flag set,
// so their defaults are the ones the command uses.
type Help struct {
	// Usage is the command's synopsis: one line per form, each starting
	// with "seckill ".
	Usage string
	// About says what the command does.
	About string
	// Env lists the environment variables the command reads.
	Env []Var
}

// Parse parses args with fs. Asked for help, it returns an error Exit
// prints as h's text on stdout, status 0 (errors.Is(err, flag.ErrHelp));
// a wrong command line, one it prints with the usage on stderr, status 2.
// fs prints nothing itself.
func (h Help) Parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return ShowHelp(h.Text(fs))
	default:
		return Wrong(fmt.Errorf("%s: %w", fs.Name(), err), h.Short(fs))
	}
}

// Text is the whole help: the usage, what the command does, fs's flags
// (fs nil: none) and the environment it reads.
func (h Help) Text(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(usage(h.Usage))
	if h.About != "" {
		b.WriteString("\n" + strings.TrimRight(h.About, "\n") + "\n")
	}
	b.WriteString(flags(fs))
	if len(h.Env) > 0 {
		b.WriteString("\nEnvironment (docs/OPERATIONS.md#configuration says what each setting means):\n")
		width := 0
		for _, v := range h.Env {
			width = max(width, len(v.Name))
		}
		for _, v := range h.Env {
			if v.Default == "" {
				fmt.Fprintf(&b, "  %s\n", v.Name)
			} else {
				fmt.Fprintf(&b, "  %-*s  default %s\n", width, v.Name, v.Default)
			}
		}
	}
	return b.String()
}

// Short is the usage and fs's flags: what a wrong command line prints.
func (h Help) Short(fs *flag.FlagSet) string { return usage(h.Usage) + flags(fs) }

// usage is the "Usage:" paragraph of synopsis.
func usage(synopsis string) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, line := range strings.Split(strings.TrimRight(synopsis, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// flags is the "Flags:" paragraph of fs ("" for none), each flag with its
// default as the command has it.
func flags(fs *flag.FlagSet) string {
	var b strings.Builder
	if fs != nil {
		fs.VisitAll(func(f *flag.Flag) {
			if b.Len() == 0 {
				b.WriteString("\nFlags:\n")
			}
			kind, usage := flag.UnquoteUsage(f)
			b.WriteString("  --" + f.Name)
			if kind != "" {
				b.WriteString(" " + kind)
			}
			b.WriteString("\n        " + strings.ReplaceAll(usage, "\n", "\n        "))
			if d := shownDefault(f); d != "" {
				b.WriteString(" (default " + d + ")")
			}
			b.WriteString("\n")
		})
	}
	return b.String()
}

// shownDefault is f's default as the help shows it: none for a zero
// value, a duration as it would be typed (3m, not 3m0s), a string quoted.
func shownDefault(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "0s", "false":
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case time.Duration:
			if d, err := time.ParseDuration(f.DefValue); err == nil {
				return Duration(d)
			}
		case string:
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// Duration formats d as a person types it: 3m, 1h, 73h, 1m30s.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// IsHelp reports whether arg, in a subcommand's place, asks for the help:
// help, -h, -help or --help.
func IsHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// helpShown is -h or --help: the help on stdout, status 0.
type helpShown struct{ text string }

func (h *helpShown) Error() string        { return "help requested" }
func (h *helpShown) Is(target error) bool { return target == flag.ErrHelp }

// ShowHelp returns the error that makes Exit print text on stdout and
// return 0: what a command returns when asked for its help.
func ShowHelp(text string) error { return &helpShown{text} }

// wrongUsage is a wrong command line: the error and the usage on stderr,
// status 2.
type wrongUsage struct {
	err   error
	usage string
}

func (w *wrongUsage) Error() string { return w.err.Error() }
func (w *wrongUsage) Unwrap() error { return w.err }

// Wrong returns the error that makes Exit print err and usage on stderr
// and return 2: a command line the command cannot run (an unknown
// subcommand, a missing one).
func Wrong(err error, usage string) error { return &wrongUsage{err, usage} }

// Exit prints what err says and returns the process's exit status: 0 when
// err is nil or the help was asked for (ShowHelp, its text on stdout), 2
// for a wrong command line (Wrong, "seckill: " err and the usage on
// stderr), 1 for any other error ("seckill: " err on stderr).
func Exit(err error, stdout, stderr io.Writer) int {
	var help *helpShown
	var wrong *wrongUsage
	switch {
	case err == nil:
		return 0
	case errors.As(err, &help):
		_, _ = io.WriteString(stdout, help.text)
		return 0
	case errors.As(err, &wrong):
		fmt.Fprintf(stderr, "seckill: %v\n\n%s", err, wrong.usage)
		return 2
	default:
		fmt.Fprintf(stderr, "seckill: %v\n", err)
		return 1
	}
}
