//go:build !slim

package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	sdkclient "go.temporal.io/sdk/client"

	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/store"
)

// TestReadme_WalkThrough pastes the ```sh blocks of README.md's section
// "Walk-through", then those of docs/FAIR-START.md's "A draw by hand",
// which goes on in the same terminal (both read from the files, so the test
// and the docs cannot drift apart), into bash, against `seckill dev` as
// `make dev` runs it, and compares what each command prints with the
// `# ->` answer written under it. A chunk that runs python3 (the draw
// checked in Python) is left out, and said so, when python3 is not on the
// PATH.
//
// The system: bin/seckill is built once (go build ./cmd/seckill) into a
// temporary directory, and `seckill dev` runs from it as a child process,
// on a database and a Redis key prefix of its own (internal/testenv),
// with the embedded Temporal server's state in PostgreSQL and its Web UI,
// as `make dev`; its stdout and stderr share one pipe, as in a terminal.
// Its ports are free ones instead of 8080, 7233 and 8233, so:
//   - the blocks' http://127.0.0.1:8080 is rewritten to the test's API URL;
//   - the blocks run with SECKILL_HTTP_ADDR, TEMPORAL_ADDRESS, DATABASE_URL,
//     REDIS_URL and SECKILL_REDIS_PREFIX set to that system's, which is
//     what `make dev`'s defaults give a person's `seckill` commands;
//   - the first block's `make build && ` is dropped: the test built bin/
//     already, and the blocks run in the directory holding it, so the rest
//     of that line (export PATH="$PWD/bin:$PATH") puts it on the PATH.
//
// As a person does, the test pastes the two `export` lines `make dev`
// printed, then every block, one after the other, into one bash. A block
// is cut into chunks: the lines up to a `# -> ` answer (its continuation
// lines are the next ones starting with "#" and three spaces or more; a
// comment "# text" is prose). A chunk's output (stdout and stderr
// together) must match its answer, compared without whitespace (the README
// wraps long JSON lines), "..." matching anything, and order ids (15+
// digits) and timestamps matching any; a chunk without an answer must
// print nothing, and every chunk must exit 0.
//
// It also checks the README's paragraph "In the Temporal UI ..." against
// Temporal (the search finds both orders of the first block; their
// histories hold what the paragraph names), that the start-up progress has no log line inside
// it, and that a clean stop (SIGINT) writes no error to the embedded
// server's log (/tmp/seckill-dev-temporal-<database>.log, here in the
// test's TMPDIR): none from its start to its stop.
func TestReadme_WalkThrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the walk-through needs %s on the PATH", tool)
	}
	_, pyErr := exec.LookPath("python3")
	section, sectionLine := docSection(t, "../README.md", "Walk-through")
	// "Check a draw yourself" goes on from docs/FAIR-START.md's draw by
	// hand: its blocks run after that one's.
	at := strings.Index(section, "\n### Check a draw yourself")
	require.GreaterOrEqual(t, at, 0, `the walk-through has a part "### Check a draw yourself"`)
	checkDraw := shBlocks(section[at+1:], "README.md", sectionLine+strings.Count(section[:at+1], "\n"))
	require.NotEmpty(t, checkDraw, `README.md's "Check a draw yourself" has no `+"```sh block")
	section = section[:at+1]
	blocks := shBlocks(section, "README.md", sectionLine)
	require.NotEmpty(t, blocks, "README.md's walk-through has no ```sh block")
	draw, drawLine := docSection(t, "../docs/FAIR-START.md", "A draw by hand")
	drawBlocks := shBlocks(draw, "docs/FAIR-START.md", drawLine)
	require.NotEmpty(t, drawBlocks, `docs/FAIR-START.md's "A draw by hand" has no `+"```sh block")
	const makeBuild = `make build && export PATH="$PWD/bin:$PATH"`
	require.True(t, strings.HasPrefix(blocks[0].text, makeBuild+"\n"),
		"the first block starts with %q (the test builds bin/seckill itself and drops `make build && `)", makeBuild)
	blocks[0].text = strings.TrimPrefix(blocks[0].text, "make build && ")
	blocks = append(append(blocks, drawBlocks...), checkDraw...)

	dir := t.TempDir()
	buildSeckill(t, filepath.Join(dir, "bin", "seckill"))

	// The system, as `make dev` runs it, on free ports.
	cfg := testConfig(t)
	history, visibility, err := store.TemporalDatabaseURLs(cfg.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = store.DropDatabase(context.Background(), history)
		_ = store.DropDatabase(context.Background(), visibility)
	})
	ports := make([]int, 3)
	for i := range ports {
		ports[i], err = devserver.FreePort("127.0.0.1")
		require.NoError(t, err)
	}
	apiAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	temporalAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	env := append(environWithout("SECKILL_", "DATABASE_URL", "REDIS_URL", "TEMPORAL_", "STRIPE_", "OTEL_", "TMPDIR"),
		"DATABASE_URL="+cfg.DatabaseURL, "REDIS_URL="+cfg.RedisURL, "SECKILL_REDIS_PREFIX="+cfg.RedisPrefix,
		"SECKILL_HTTP_ADDR="+apiAddr, "SECKILL_DEV_TEMPORAL_PORT="+strconv.Itoa(ports[1]),
		"SECKILL_DEV_UI_PORT="+strconv.Itoa(ports[2]), "TEMPORAL_ADDRESS="+temporalAddr, "TMPDIR="+tmp)
	dev := startSeckillDev(t, filepath.Join(dir, "bin", "seckill"), env)

	t.Run("start-up progress has no log line inside it", func(t *testing.T) {
		before, _, ok := strings.Cut(dev.output(), "\nseckill dev is running.")
		require.True(t, ok)
		for _, line := range strings.Split(before, "\n") {
			if line == "" || strings.HasPrefix(line, "• ") || strings.HasPrefix(line, "  ✓ ") ||
				strings.HasPrefix(line, "(the embedded Temporal server logs to ") {
				continue
			}
			t.Errorf("a line inside the start-up progress is not progress: %q\nthe whole progress:\n%s", line, before)
		}
	})

	// Paste the export lines, then every block, into one bash.
	exports := regexp.MustCompile(`(?m)^\s*export (ADMIN|ALICE)=(\S+)$`).FindAllStringSubmatch(dev.output(), -1)
	require.Len(t, exports, 2, "`seckill dev` prints export ADMIN=... and export ALICE=...:\n%s", dev.output())
	shell := env
	for _, e := range exports {
		shell = append(shell, e[1]+"="+e[2])
	}
	var script strings.Builder
	var chunks []readmeChunk
	for i, b := range blocks {
		text := strings.ReplaceAll(b.text, "http://127.0.0.1:8080", "http://"+apiAddr)
		for _, c := range parseChunks(t, text, b.file, b.line) {
			c.block = i + 1
			if pyErr != nil && strings.Contains(c.code, "python3 ") {
				t.Logf("%s:%d left out: python3 is not on the PATH", c.file, c.line)
				continue
			}
			fmt.Fprintf(&script, "printf '\\n@@CHUNK %d@@\\n'\n%s\nprintf '\\n@@RC %d %%d@@\\n' $?\n", len(chunks), c.code, len(chunks))
			chunks = append(chunks, c)
		}
		if i == 0 {
			script.WriteString("printf '\\n@@FIRST A=%s B=%s SALE=%s@@\\n' \"$A\" \"$B\" \"$SALE\"\n")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bash := exec.CommandContext(ctx, "bash", "-c", script.String())
	bash.Dir, bash.Env = dir, shell
	var out bytes.Buffer
	bash.Stdout, bash.Stderr = &out, &out // one pipe: the order a terminal shows
	start := time.Now()
	runErr := bash.Run()
	t.Logf("the walk-through's blocks ran in %s", time.Since(start).Round(100*time.Millisecond))
	require.NoError(t, runErr, "bash:\n%s", out.String())
	outputs, codes := splitChunkOutputs(t, out.String(), len(chunks))
	for i, c := range chunks {
		t.Run(fmt.Sprintf("block %d, %s:%d", c.block, c.file, c.line), func(t *testing.T) {
			got := outputs[i]
			require.Equal(t, 0, codes[i], "exit status of:\n%s\noutput:\n%s", c.code, got)
			if c.expect == "" {
				require.Empty(t, strings.TrimSpace(got), "prints nothing in %s:\n%s", c.file, c.code)
				return
			}
			require.Truef(t, answerMatches(c.expect, got),
				"the answer in %s differs from what the command printed\ncommand:\n%s\nanswer:\n%s\nprinted:\n%s", c.file, c.code, c.expect, got)
		})
	}

	t.Run("the Temporal UI paragraph", func(t *testing.T) {
		m := regexp.MustCompile(`@@FIRST A=(\d+) B=(\d+) SALE=(\d+)@@`).FindStringSubmatch(out.String())
		require.NotNil(t, m)
		orderA, orderB, sale := m[1], m[2], m[3]
		start := strings.Index(section, "\nIn the Temporal UI, search")
		require.GreaterOrEqual(t, start, 0, `the walk-through has a paragraph "In the Temporal UI, search ..."`)
		para, _, _ := strings.Cut(section[start+1:], "\n\n")
		query := regexp.MustCompile("search `([^`]+)`").FindStringSubmatch(para)
		require.NotNil(t, query, "the paragraph names a search")
		require.Equal(t, `SaleId="`+sale+`"`, query[1], "the search finds the first block's sale")
		for _, named := range []string{"`order-<order id>`", "`OrderSaga`", "StartOrder", "the `payment` signal", "ConfirmPayment", "the timer firing", "ReleaseOrder"} {
			require.Contains(t, para, named, "the paragraph names what this test checks")
		}
		tc, err := sdkclient.Dial(sdkclient.Options{HostPort: temporalAddr, Logger: nopLogger{}})
		require.NoError(t, err)
		defer tc.Close()
		var found []string
		require.Eventually(t, func() bool {
			resp, err := tc.WorkflowService().ListWorkflowExecutions(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: "default", Query: query[1],
			})
			if err != nil {
				return false
			}
			found = found[:0]
			for _, e := range resp.GetExecutions() {
				found = append(found, e.GetType().GetName()+" "+e.GetExecution().GetWorkflowId())
			}
			return len(found) == 2
		}, 20*time.Second, 250*time.Millisecond, "the search finds both orders: %v", found)
		require.ElementsMatch(t, []string{"OrderSaga order-" + orderA, "OrderSaga order-" + orderB}, found)

		alice := historyOf(t, tc, "order-"+orderA)
		require.Contains(t, alice, "marker StartOrder")
		require.Contains(t, alice, "signal payment")
		require.Contains(t, alice, "marker ConfirmPayment")
		bob := historyOf(t, tc, "order-"+orderB)
		require.Contains(t, bob, "marker StartOrder")
		require.Contains(t, bob, "timer fired")
		require.Contains(t, bob, "marker ReleaseOrder")
		require.NotContains(t, bob, "signal payment")
	})

	t.Run("a clean stop writes no error", func(t *testing.T) {
		require.NoError(t, dev.cmd.Process.Signal(syscall.SIGINT))
		select {
		case <-dev.done:
			require.NoError(t, dev.err, "seckill dev exits 0 at Ctrl-C:\n%s", dev.output())
		case <-time.After(90 * time.Second):
			t.Fatalf("seckill dev still running 90 s after SIGINT:\n%s", dev.output())
		}
		require.Contains(t, dev.output(), "seckill dev stopped cleanly")
		logs, err := filepath.Glob(filepath.Join(tmp, "seckill-dev-temporal-*.log"))
		require.NoError(t, err)
		require.Len(t, logs, 1, "the embedded server's log is in TMPDIR, one per installation")
		b, err := os.ReadFile(logs[0])
		require.NoError(t, err)
		var errs []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var rec struct{ Level, Msg, Error string }
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Level != "debug" && rec.Level != "info" && rec.Level != "warn" {
				errs = append(errs, line)
			}
		}
		require.Empty(t, errs, "the embedded Temporal server's log (%s) has error lines from start to a clean stop", logs[0])
	})
}

// docSection is the section of the Markdown file at path whose "## "
// heading starts with title, up to the next section, and the line it
// starts on.
func docSection(t *testing.T, path, title string) (string, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(b)
	start := strings.Index(doc, "\n## "+title)
	require.GreaterOrEqual(t, start, 0, "%s has a section ## %s", path, title)
	section := doc[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end+1]
	}
	return section, strings.Count(doc[:start+1], "\n") + 1
}

type shBlock struct {
	text string
	file string // the document, as the repository names it
	line int    // its line of the block's first line
}

// shBlocks returns the ```sh blocks of text, which starts on line
// firstLine of file.
func shBlocks(text, file string, firstLine int) []shBlock {
	var blocks []shBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```sh" {
			continue
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(lines) && lines[j] != "```"; j++ {
			b.WriteString(lines[j] + "\n")
		}
		blocks = append(blocks, shBlock{text: b.String(), file: file, line: firstLine + i + 1})
		i = j
	}
	return blocks
}

// readmeChunk is the commands up to one `# -> ` answer of a block.
type readmeChunk struct {
	block  int
	file   string // the document the block is in
	line   int    // its line of the chunk's first line
	code   string // the lines pasted, comments included
	expect string // the answer, "" when the README shows none
}

var answerContinuation = regexp.MustCompile(`^#\s{3,}\S`)

// parseChunks cuts a block into chunks (see TestReadme_WalkThrough).
func parseChunks(t *testing.T, block, file string, firstLine int) []readmeChunk {
	t.Helper()
	var (
		chunks   []readmeChunk
		code     []string
		expect   []string
		start    = firstLine
		inAnswer bool
	)
	hasCode := func() bool {
		for _, l := range code {
			if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
				return true
			}
		}
		return false
	}
	flush := func(next int) {
		if hasCode() || len(expect) > 0 {
			require.True(t, hasCode(), "%s:%d: an answer with no command before it", file, start)
			chunks = append(chunks, readmeChunk{file: file, line: start, code: strings.Join(code, "\n"), expect: strings.Join(expect, "\n")})
		}
		code, expect, start, inAnswer = nil, nil, next, false
	}
	for i, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# -> "):
			require.False(t, inAnswer, "%s:%d: two answers in a row", file, firstLine+i)
			expect, inAnswer = append(expect, strings.TrimPrefix(line, "# -> ")), true
		case inAnswer && answerContinuation.MatchString(line):
			expect = append(expect, strings.TrimSpace(line[1:]))
		default:
			if inAnswer {
				flush(firstLine + i)
			}
			code = append(code, line)
		}
	}
	flush(0)
	return chunks
}

// splitChunkOutputs cuts bash's output at the markers the script prints
// around each chunk.
func splitChunkOutputs(t *testing.T, out string, n int) ([]string, []int) {
	t.Helper()
	outputs, codes := make([]string, n), make([]int, n)
	for i := range n {
		begin := fmt.Sprintf("\n@@CHUNK %d@@\n", i)
		b := strings.Index(out, begin)
		require.GreaterOrEqual(t, b, 0, "chunk %d did not start:\n%s", i, out)
		rest := out[b+len(begin):]
		m := regexp.MustCompile(fmt.Sprintf(`\n@@RC %d (\d+)@@\n`, i)).FindStringSubmatchIndex(rest)
		require.NotNil(t, m, "chunk %d did not end:\n%s", i, rest)
		outputs[i] = rest[:m[0]]
		codes[i], _ = strconv.Atoi(rest[m[2]:m[3]])
	}
	return outputs, codes
}

var (
	whitespace = regexp.MustCompile(`\s+`)
	// Order ids and timestamps in an answer stand for any.
	looseTokens = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z|\d{15,}`)
)

// answerMatches compares printed with the README's answer, both without
// whitespace: "..." matches anything, an order id any order id, a
// timestamp any timestamp.
func answerMatches(answer, printed string) bool {
	answer, printed = whitespace.ReplaceAllString(answer, ""), whitespace.ReplaceAllString(printed, "")
	var pattern strings.Builder
	pattern.WriteString(`(?s)^`)
	for i, piece := range strings.Split(answer, "...") {
		if i > 0 {
			pattern.WriteString(`.*?`)
		}
		last := 0
		for _, m := range looseTokens.FindAllStringIndex(piece, -1) {
			pattern.WriteString(regexp.QuoteMeta(piece[last:m[0]]))
			if strings.Contains(piece[m[0]:m[1]], "T") {
				pattern.WriteString(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z`)
			} else {
				pattern.WriteString(`\d{15,20}`)
			}
			last = m[1]
		}
		pattern.WriteString(regexp.QuoteMeta(piece[last:]))
	}
	pattern.WriteString(`$`)
	return regexp.MustCompile(pattern.String()).MatchString(printed)
}

func TestReadme_AnswerMatches(t *testing.T) {
	for _, c := range []struct {
		answer, printed string
		ok              bool
	}{
		{`{"id":"2", ..., "state":"ACTIVE",` + "\n" + `"stock":{"total":1}}`, `{"id":"2","name":"x","state":"ACTIVE","stock":{"total":1}}`, true},
		{`{"id":"2", ...}`, `{"id":"3","name":"x"}`, false},
		{`order 2124344629008695296 PAID`, "order 2125110775750074368 PAID\n", true},
		{`order 2124344629008695296 PAID`, "order 2125110775750074368 CLOSED PAYMENT_TIMEOUT\n", false},
		{`{"pay_by":"2026-11-22T10:00:30.512Z"}`, `{"pay_by":"2027-01-02T03:04:05.6Z"}`, true},
		{`{"outcome":"DELIVERED"}`, `{"outcome":"RECEIVED"}`, false},
		{`sale 3: ok`, "sale 3: ok\nextra", false},
	} {
		require.Equal(t, c.ok, answerMatches(c.answer, c.printed), "%q vs %q", c.answer, c.printed)
	}
}

// buildSeckill puts the full seckill binary (built once per test run, see
// seckillBinary) at path.
func buildSeckill(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.Symlink(seckillBinary(t), path))
}

// buildSeckillTo builds the full seckill binary to path.
func buildSeckillTo(path string) error {
	goBin := "go"
	if p := os.Getenv("GO"); p != "" {
		goBin = p
	}
	cmd := exec.Command(goBin, "build", "-o", path, "./cmd/seckill")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/seckill: %w\n%s", err, out)
	}
	return nil
}

// environWithout is the test's environment without the variables whose
// names start with one of prefixes.
func environWithout(prefixes ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

// seckillDev is `seckill dev` running as a child process.
type seckillDev struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited, with err
	err  error
	mu   sync.Mutex
	out  bytes.Buffer // stdout and stderr, as one terminal shows them
}

func (d *seckillDev) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

// startSeckillDev runs `bin dev` with env, its stdout and stderr on one
// pipe, and waits until it has printed its URLs and tokens.
func startSeckillDev(t *testing.T, bin string, env []string) *seckillDev {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	d := &seckillDev{cmd: exec.Command(bin, "dev"), done: make(chan struct{})}
	d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = env, w, w
	require.NoError(t, d.cmd.Start())
	_ = w.Close()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
	})
	banner := make(chan struct{})
	go func() {
		defer func() { _ = r.Close() }()
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			d.mu.Lock()
			d.out.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if !seen && strings.Contains(sc.Text(), "seckill pay --order ORDER_ID") {
				seen = true
				close(banner)
			}
		}
	}()
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	select {
	case <-banner:
	case <-d.done:
		t.Fatalf("seckill dev exited (%v):\n%s", d.err, d.output())
	case <-time.After(3 * time.Minute):
		t.Fatalf("seckill dev not ready after 3 minutes:\n%s", d.output())
	}
	return d
}

// historyOf summarises a workflow's history: "marker <activity type>" per
// local activity, "signal <name>", "timer fired".
func historyOf(t *testing.T, tc sdkclient.Client, workflowID string) []string {
	t.Helper()
	var events []string
	it := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			events = append(events, "marker "+localActivityType(ev.GetMarkerRecordedEventAttributes()))
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			events = append(events, "signal "+ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName())
		case enumspb.EVENT_TYPE_TIMER_FIRED:
			events = append(events, "timer fired")
		}
	}
	return events
}

// localActivityType reads the activity type of a local activity's marker.
func localActivityType(m *historypb.MarkerRecordedEventAttributes) string {
	for _, p := range m.GetDetails()["data"].GetPayloads() {
		var data struct{ ActivityType string }
		if json.Unmarshal(p.GetData(), &data) == nil && data.ActivityType != "" {
			return data.ActivityType
		}
	}
	return m.GetMarkerName()
}
