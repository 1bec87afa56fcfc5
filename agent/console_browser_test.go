package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium is Debian's Chromium, which .ci/run installs. Without it the browser tests skip,
// except under CI, where they fail.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium not installed (.ci/run installs Debian's chromium): %v", err)
		}
		t.Skip("chromium not installed")
	}
	return path
}

// feedLines writes lines of text to topic, round-robin over its partitions, until the test
// ends.
func feedLines(t *testing.T, brokers []string, topic string, partitions int32, lines ...string) {
	t.Helper()
	p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			msg := &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % partitions, Value: sarama.StringEncoder(lines[i%len(lines)])}
			if _, _, err := p.SendMessage(msg); err != nil {
				return // the broker stopped with the test
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-stopped
		p.Close()
	})
}

// The browser tests share one headless Chromium, started by the first and closed by
// TestMain: starting it costs a second or two, and each case opens a tab of its own.
var sharedChromium struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab, which owns it
	cancel func()
	err    error
}

// closeChromium closes the shared Chromium, if a test started it.
func closeChromium() {
	if sharedChromium.cancel != nil {
		sharedChromium.cancel()
	}
}

// chromiumTab opens a tab of the shared headless Chromium (a fresh profile, as the brief of
// issue 18 says), closed when the test ends, and collects what its pages log as an error:
// console errors and warnings, uncaught exceptions, Content-Security-Policy violations,
// answers with an error status and requests that fail (but those the page cancels, as a
// stopped tap or a page left).
func chromiumTab(t *testing.T, timeout time.Duration) (context.Context, func() []string) {
	t.Helper()
	path := chromium(t)
	sharedChromium.once.Do(func() {
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.WindowSize(1400, 1800),
		}
		dir, err := os.MkdirTemp("", "stoatflow-chromium-")
		if err != nil {
			sharedChromium.err = err
			return
		}
		opts = append(opts, chromedp.UserDataDir(dir))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		sharedChromium.ctx = ctx
		sharedChromium.cancel = func() { cancel(); cancelAlloc(); _ = os.RemoveAll(dir) }
		sharedChromium.err = chromedp.Do(ctx) // starts Chromium
	})
	if sharedChromium.err != nil {
		t.Fatalf("start chromium: %v", sharedChromium.err)
	}
	tab, cancelTab := chromedp.NewContext(sharedChromium.ctx)
	ctx, cancelTimeout := context.WithTimeout(tab, timeout)
	t.Cleanup(func() { cancelTimeout(); cancelTab() })
	var mu sync.Mutex
	var problems []string
	urls := map[network.RequestID]string{}
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("%s %s: %s %s", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			urls[e.RequestID] = e.Request.Method + " " + e.Request.URL
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				problems = append(problems, fmt.Sprintf("answer %d to %s", e.Response.Status, urls[e.RequestID]))
			}
		case *network.EventLoadingFailed:
			if !e.Canceled {
				problems = append(problems, fmt.Sprintf("request failed: %s: %s", urls[e.RequestID], e.ErrorText))
			}
		}
	}
	if err := chromedp.Listen(ctx, listen); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	if err := chromedp.Do(ctx); err != nil { // opens the tab; chromedp enables the Runtime, Log and Network events
		t.Fatalf("open a tab: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// waitJS evaluates expr until it returns true.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr, chromedp.EvalAwaitPromise))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
			t.Fatalf("the page never showed %s (%s; last error %v):\n%.3000s", what, expr, err, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The console as a person uses it, in Chromium, against a running word count: the graph
// has every node of describe(), rates move, a tap shows records of the node chosen, the store
// browser finds a key, and the page logs no error. STOATFLOW_CONSOLE_SCREENSHOT=path saves
// a screenshot (docs/img/console.png is made so).
func TestConsoleInChromium(t *testing.T) {
	ctx, problems := chromiumTab(t, 90*time.Second)
	script, err := os.ReadFile("../scripts/wordcount.lua")
	if err != nil {
		t.Fatal(err)
	}
	brokers := testBroker(t, 3, "text-lines", "word-counts")
	ra := startAgent(t, testConfig(t, brokers, string(script), ""))
	t.Cleanup(func() { _ = ra.stop(t) })
	feedLines(t, brokers, "text-lines", 3, "the stoat streams records", "a stoat counts words in lua", "kafka streams in a sidecar")
	addr, err := ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+addr+"/ui")); err != nil {
		t.Fatal(err)
	}

	names := ra.a.topology.Load().desc.NodeNames()
	want, _ := json.Marshal(names)
	waitJS(t, ctx, "every node of describe() on the graph",
		fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#graph .node")].map((n) => n.dataset.node)) === %q`, want))

	source := "KSTREAM-SOURCE-0000000000"
	rateOf := func(node string) string {
		return fmt.Sprintf(`parseFloat(document.querySelector('#graph .node[data-node=%q] .rate').textContent)`, node)
	}
	waitJS(t, ctx, "the source's rate above zero", rateOf(source)+" > 0")
	readTotal := `fetch("/v1/status").then((r) => r.json()).then((s) => s.nodes["` + source + `"].processed)`
	first, err := chromedp.Run(ctx, chromedp.Evaluate[float64](readTotal, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "records still moving", fmt.Sprintf(`fetch("/v1/status").then((r) => r.json()).then((s) => s.nodes[%q].processed > %v)`, source, first))

	flat := "KSTREAM-FLATMAPVALUES-0000000001"
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#graph .node[data-node=%q]`, flat))),
		chromedp.WaitVisible(chromedp.CSS(`#details .describe`)),
	); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the node's describe() line in its details",
		fmt.Sprintf(`document.querySelector("#details .describe").textContent.includes("Processor: %s (stores: [])")`, flat))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#details button`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "tapped records of "+flat, fmt.Sprintf(
		`(() => { const rows = [...document.querySelectorAll("#tap-records tr")];
		  return rows.length >= 3 && rows.every((r) => r.dataset.node === %q) &&
		    rows.some((r) => r.children[2].textContent === "stoat"); })()`, flat))

	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tap-stop`)),
		chromedp.SetValue(chromedp.CSS(`#query-store`), "word-counts"),
		chromedp.SetValue(chromedp.CSS(`#query-key`), "stoat"),
		chromedp.Click(chromedp.CSS(`input[name=isolation][value=READ_COMMITTED]`)),
		chromedp.Click(chromedp.CSS(`#query-form button[type=submit]`)),
	); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the store browser finding stoat", `(() => { const r = document.querySelector("#query-result tr");
	  return r !== null && r.children[0].textContent === "stoat" && parseInt(r.children[1].textContent) > 0; })()`)
	waitJS(t, ctx, "the time view", `document.querySelectorAll("#partitions tr").length === 3 && document.getElementById("watermark").textContent !== "–"`)
	waitJS(t, ctx, "the stores' entries", `parseInt(document.querySelector("#stores tr").children[2].textContent) > 0`)

	waitJS(t, ctx, "no error banner", `document.getElementById("error").hidden`)
	if path := os.Getenv("STOATFLOW_CONSOLE_SCREENSHOT"); path != "" {
		// A picture worth looking at: a sparkline of some seconds.
		waitJS(t, ctx, "a sparkline of 15 samples", `(document.querySelector("#spark polyline")?.getAttribute("points") || "").split(" ").length >= 15`)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p := problems(); len(p) > 0 {
		t.Fatalf("the page logged errors:\n%s", strings.Join(p, "\n"))
	}
}

// The Tasks card, at the widths people use, in both group protocols: in a classic group
// this agent runs every task of the word count, each with its lag; in a streams group (its
// status faked in the page: no broker here spreads tasks) the rows name the other agents,
// whose lag only they know. Nothing is wider than its card and the page logs no error.
// STOATFLOW_CONSOLE_SHOTS=dir saves a screenshot at each width.
func TestConsoleTasksInChromium(t *testing.T) {
	ctx, problems := chromiumTab(t, 90*time.Second)
	script, err := os.ReadFile("../scripts/wordcount.lua")
	if err != nil {
		t.Fatal(err)
	}
	brokers := testBroker(t, 3, "text-lines", "word-counts")
	ra := startAgent(t, testConfig(t, brokers, string(script), `application.server = "stoat-1.stoatflow-headless.production.svc.cluster.local:9464"`))
	t.Cleanup(func() { _ = ra.stop(t) })
	feedLines(t, brokers, "text-lines", 3, "the stoat streams records", "a stoat counts words in lua")
	addr, err := ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, id := range ra.a.appTasks.Load().ids {
		ids = append(ids, id.String())
	}
	want, _ := json.Marshal(ids)
	rowIDs := `JSON.stringify([...document.querySelectorAll("#task-rows tr")].map((r) => r.dataset.task))`
	cell := func(task string, col int) string {
		return fmt.Sprintf(`document.querySelector('#task-rows tr[data-task=%q]').children[%d].textContent`, task, col)
	}
	streams := `{"groupProtocol":"streams","self":"stoat-1.stoatflow-headless.production.svc.cluster.local:9464","tasks":[
	  {"taskId":"0_0","agent":"stoat-1.stoatflow-headless.production.svc.cluster.local:9464","thisAgent":true,"standbys":[],"recordsLag":1234567},
	  {"taskId":"0_1","agent":"stoat-2.stoatflow-headless.production.svc.cluster.local:9464","thisAgent":false,"standbys":["stoat-1.stoatflow-headless.production.svc.cluster.local:9464","stoat-3.stoatflow-headless.production.svc.cluster.local:9464"],"recordsLag":null},
	  {"taskId":"0_2","agent":"","thisAgent":false,"standbys":[],"recordsLag":null},
	  {"taskId":"1_0","agent":"stoat-1.stoatflow-headless.production.svc.cluster.local:9464","thisAgent":true,"standbys":[],"recordsLag":-1},
	  {"taskId":"1_1","agent":"stoat-3.stoatflow-headless.production.svc.cluster.local:9464","thisAgent":false,"standbys":[],"recordsLag":null},
	  {"taskId":"1_2","agent":"stoat-2.stoatflow-headless.production.svc.cluster.local:9464","thisAgent":false,"standbys":[],"recordsLag":null}]}`
	// fakeStreams makes the page read the streams group's assignment in every status.
	fakeStreams := `(() => { const real = window.fetch; const shape = ` + streams + `;
	  window.fetch = async (path, init) => {
	    const res = await real(path, init);
	    if (path !== "/v1/status") return res;
	    const s = await res.json();
	    s.assignment = shape;
	    return new Response(JSON.stringify(s), { status: 200, headers: { "Content-Type": "application/json" } });
	  };
	  return true; })()`
	for _, width := range consoleWidths {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1000), chromedp.Navigate("http://"+addr+"/ui")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "a row per task of the word count", fmt.Sprintf(`%s === %q`, rowIDs, want))
		waitJS(t, ctx, "this agent and a lag on every row", `[...document.querySelectorAll("#task-rows tr")].every((r) =>
		  r.children[1].textContent === "this agentstoat-1.stoatflow-headless.production.svc.cluster.local:9464" && /^[0-9,]+$/.test(r.children[2].textContent))`)
		waitJS(t, ctx, "the classic summary", `document.getElementById("tasks-summary").textContent.startsWith("classic group: this agent (stoat-1")`)
		checkNoOverflow(t, ctx, width)

		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fakeStreams)); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the streams group's summary",
			`document.getElementById("tasks-summary").textContent === "streams group: 2 of 6 tasks on this agent (stoat-1.stoatflow-headless.production.svc.cluster.local:9464), the others on 2 other agents"`)
		for _, c := range []struct{ task, agent, lag, standbys string }{
			{"0_0", "this agentstoat-1.stoatflow-headless.production.svc.cluster.local:9464", "1,234,567", "–"},
			{"0_1", "stoat-2.stoatflow-headless.production.svc.cluster.local:9464", "–",
				"stoat-1.stoatflow-headless.production.svc.cluster.local:9464, stoat-3.stoatflow-headless.production.svc.cluster.local:9464"},
			{"0_2", "none named", "–", "–"},
			{"1_0", "this agentstoat-1.stoatflow-headless.production.svc.cluster.local:9464", "not fetched yet", "–"},
			{"1_1", "stoat-3.stoatflow-headless.production.svc.cluster.local:9464", "–", "–"},
		} {
			checkJS(t, ctx, "task "+c.task, fmt.Sprintf(`%s === %q && %s === %q && %s === %q`,
				cell(c.task, 1), c.agent, cell(c.task, 2), c.lag, cell(c.task, 3), c.standbys))
		}
		checkJS(t, ctx, "the note on other agents' lag", `document.getElementById("tasks-note").textContent.includes("known for this agent's tasks only")`)
		checkNoOverflow(t, ctx, width)
		if dir := os.Getenv("STOATFLOW_CONSOLE_SHOTS"); dir != "" {
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("tasks-%d.png", width)), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkJS(t, ctx, "no error banner", `document.getElementById("error").hidden`)
	if p := problems(); len(p) > 0 {
		t.Fatalf("the page logged errors:\n%s", strings.Join(p, "\n"))
	}
}
