package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/chromedp/cdproto/log"
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

// browser opens a headless Chromium with a fresh profile, as the brief of issue 18 says,
// and collects what the page logs as an error: console errors, uncaught exceptions, failed
// loads and Content-Security-Policy violations.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	var mu sync.Mutex
	var problems []string
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
		}
	}
	if err := chromedp.Listen(ctx, listen); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Do(ctx); err != nil { // starts Chromium; chromedp enables the Runtime and Log events
		t.Fatalf("start chromium: %v", err)
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
	ctx, problems := browser(t)
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
