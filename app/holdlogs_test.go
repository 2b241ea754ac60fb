package app

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// holdLogs writes nothing until released, then every held record in the
// order logged (attributes and groups kept), then passes records at once;
// past maxHeldLogs it stops holding rather than grow.
func TestHoldLogs_WritesNothingUntilReleasedThenEveryRecordInOrder(t *testing.T) {
	var out bytes.Buffer
	base := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	log, release := holdLogs(base)
	log.Info("one")
	log.With("sale", 7).WithGroup("g").Warn("two", "k", "v")
	require.Empty(t, out.String(), "held until release")
	release()
	require.Equal(t, "level=INFO msg=one\nlevel=WARN msg=two sale=7 g.k=v\n", out.String())
	log.Info("three")
	require.True(t, strings.HasSuffix(out.String(), "msg=three\n"), "passes at once once released")
	release() // a second release is harmless
	require.Equal(t, 3, strings.Count(out.String(), "\n"))

	out.Reset()
	log, _ = holdLogs(base)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxHeldLogs / 2 {
				log.Info(fmt.Sprintf("w%d-%d", w, i))
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 2*maxHeldLogs, strings.Count(out.String(), "\n"),
		"past maxHeldLogs the held records are written and the rest pass: none lost")

	nilLog, nilRelease := holdLogs(nil)
	require.Nil(t, nilLog)
	nilRelease()
}
