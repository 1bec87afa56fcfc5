package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// consoleWidths are the window widths the console is checked at: a laptop's and a desktop's.
var consoleWidths = []int64{1280, 1920}

// The console of every example, as `make run EXAMPLE=NAME` runs it with its demo feeder, at
// the widths people use: the page logs no error and fails no request, nothing is wider than
// the window or its card (the graph included, which is drawn smaller rather than cut), a
// join with a global table has its edge to the store, every store has its entries counted
// and a size, the Time panel calls no partition idle while records arrive, a tap shows
// records, and the store browser reads every store, window, session and versioned ones
// included. STOATFLOW_CONSOLE_SHOTS=dir saves a screenshot of each example at each width.
func TestConsoleOfEveryExampleInChromium(t *testing.T) {
	began := time.Now()
	examples := exampleConfigs(t)
	names := make([]string, 0, len(examples))
	for name := range examples {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ctx, problems := chromiumTab(t, 3*time.Minute)
			ra := startAgentWith(t, loadExample(t, examples[name], t.TempDir()), metrics.New())
			defer func() { _ = ra.stop(t) }()
			addr, err := ra.a.HTTPAddr(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, width := range consoleWidths {
				checkConsoleAt(t, ctx, ra, "http://"+addr, width)
				if dir := os.Getenv("STOATFLOW_CONSOLE_SHOTS"); dir != "" {
					png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, width)), png, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if p := problems(); len(p) > 0 {
				t.Fatalf("the page logged errors:\n%s", strings.Join(p, "\n"))
			}
		})
	}
	t.Logf("the console of %d examples at %d widths took %s", len(names), len(consoleWidths), time.Since(began).Round(time.Millisecond))
}

// checkConsoleAt opens the console of the agent at base in a window width pixels wide and
// checks it once the page shows its data, a tap and a read of every store.
func checkConsoleAt(t *testing.T, ctx context.Context, ra *runningAgent, base string, width int64) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1000), chromedp.Navigate(base+"/ui")); err != nil {
		t.Fatal(err)
	}
	desc := ra.a.topology.Load().desc
	want, _ := json.Marshal(desc.NodeNames())
	waitJS(t, ctx, "every node of describe() on the graph",
		fmt.Sprintf(`JSON.stringify([...document.querySelectorAll("#graph .node")].map((n) => n.dataset.node)) === %q`, want))
	for _, n := range describedNodes(desc) {
		for _, s := range n.ReadsGlobal {
			waitJS(t, ctx, fmt.Sprintf("the edge from %s to the global store %s", n.Name, s),
				fmt.Sprintf(`document.querySelector('#graph path.edge[data-from=%q][data-to=%q]') !== null`, n.Name, "store:"+s))
		}
	}

	// Records arrive at every example's sources: some partition reads them, and none that
	// does is called idle.
	waitJS(t, ctx, "records per second on a source partition",
		`[...document.querySelectorAll("#partitions tr")].some((r) => parseFloat(r.children[2].textContent) > 0)`)
	checkJS(t, ctx, "no partition that receives records is called idle", `[...document.querySelectorAll("#partitions tr")].every((r) =>
		!(parseFloat(r.children[2].textContent) > 0 && r.querySelector(".tag.idle")))`)

	// Every store has its entries counted and, once it has some, a size.
	specs := ra.a.stores.Load().Specs
	if len(specs) > 0 {
		waitJS(t, ctx, "every store's entries", fmt.Sprintf(`(() => { const rows = [...document.querySelectorAll("#stores tr")];
		  return rows.length === %d && rows.every((r) => /^[0-9,]+$/.test(r.children[2].textContent)); })()`, len(specs)))
		checkJS(t, ctx, "a size for every store with entries", `[...document.querySelectorAll("#stores tr")].every((r) =>
		  r.children[2].textContent === "0" || r.children[3].textContent !== "0 B")`)
	}

	tapAnOutput(t, ctx, desc)
	for _, spec := range specs {
		readInStoreBrowser(t, ctx, ra, spec)
	}
	checkJS(t, ctx, "no error banner", `document.getElementById("error").hidden`)
	checkNoOverflow(t, ctx, width)
}

func describedNodes(d *pipeline.TopologyDescription) []pipeline.DescribedNode {
	var out []pipeline.DescribedNode
	for _, st := range d.Subtopologies {
		out = append(out, st.Nodes...)
	}
	for _, g := range d.GlobalStores {
		out = append(out, g.Source, g.Processor)
	}
	return out
}

// tapAnOutput taps the node that feeds the first sink (its values are what the example
// writes: the widest) until the tap shows three records, then stops it.
func tapAnOutput(t *testing.T, ctx context.Context, d *pipeline.TopologyDescription) {
	t.Helper()
	var node string
	for _, n := range describedNodes(d) {
		if n.Type == "sink" && !n.Internal {
			node = n.Predecessors[0]
			break
		}
	}
	checkJS(t, ctx, "the tap started", fmt.Sprintf(`(() => { document.getElementById("tap-node").value = %q;
	  document.getElementById("tap-form").requestSubmit(); return true; })()`, node))
	waitJS(t, ctx, "three tapped records of "+node, fmt.Sprintf(
		`(() => { const rows = [...document.querySelectorAll("#tap-records tr")];
		  return rows.length >= 3 && rows.every((r) => r.dataset.node === %q); })()`, node))
	checkJS(t, ctx, "the tap stopped", `(() => { document.getElementById("tap-stop").click(); return true; })()`)
	waitJS(t, ctx, "the tap stopped", `!document.getElementById("tap-start").disabled`)
}

// readInStoreBrowser reads one store in the store browser, with each read its type offers,
// for a key it holds, and checks what it shows.
func readInStoreBrowser(t *testing.T, ctx context.Context, ra *runningAgent, spec pipeline.StoreSpec) {
	t.Helper()
	key := storedKey(t, ra, spec)
	read := func(mode, key string, rowsWant, firstCell string) {
		t.Helper()
		checkJS(t, ctx, "a read of "+spec.Name, fmt.Sprintf(`(() => {
		  const $ = (id) => document.getElementById(id);
		  $("query-result").replaceChildren(); $("query-note").textContent = "";
		  $("query-store").value = %q; $("query-store").dispatchEvent(new Event("change"));
		  $("query-mode").value = %q; $("query-mode").dispatchEvent(new Event("change"));
		  if ($("query-mode").value !== %[2]q) return false;
		  $("query-key").value = %[3]q; $("query-to").value = "";
		  $("query-form").requestSubmit(); return true; })()`, spec.Name, mode, key))
		waitJS(t, ctx, fmt.Sprintf("%s of %s %q: %s", mode, spec.Name, key, rowsWant), fmt.Sprintf(`(() => {
		  const rows = [...document.querySelectorAll("#query-result tr")];
		  return /^[0-9]+ /.test(document.getElementById("query-note").textContent) && rows.length %s &&
		    (%q === "" || rows[0].children[0].textContent === %[2]q); })()`, rowsWant, firstCell))
	}
	switch spec.Type {
	case pipeline.KeyValueStoreType, pipeline.TimestampedKeyValueStoreType:
		read("get", key, "=== 1", key)
		read("range", "", ">= 1", "")
		// A value the tap showed and one the store holds agree on the JSON type of the
		// fields they share (a long is a number in both, as the store's serde has it).
		checkJS(t, ctx, "the tap and store "+spec.Name+" showing shared fields alike", `(() => {
		  const objects = (sel, col) => [...document.querySelectorAll(sel)].map((r) => {
		    try { const v = JSON.parse(r.children[col].textContent); return v && typeof v === "object" ? v : null; } catch { return null; } }).filter((v) => v);
		  const tapped = objects("#tap-records tr", 2), stored = objects("#query-result tr", 1);
		  return tapped.every((a) => stored.every((b) => Object.keys(a).every((k) => !(k in b) || typeof a[k] === typeof b[k]))); })()`)
	case pipeline.VersionedKeyValueStoreType:
		read("get", key, "=== 1", key)
		read("range", "", ">= 1", "")
		read("history", key, ">= 1", "")
	case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType, pipeline.SessionStoreType:
		read("windows", key, ">= 1", key)
	default:
		t.Fatalf("store %s: the test does not know type %s", spec.Name, spec.Type)
	}
}

// storedKey is the text form of a key store holds (its serde is string): from its first
// entry, read over HTTP for key-value stores, from the database for window and session
// stores, which the API lists by key only.
func storedKey(t *testing.T, ra *runningAgent, spec pipeline.StoreSpec) string {
	t.Helper()
	if spec.Serdes.Key != nil && spec.Serdes.Key.Name() != "string" {
		t.Fatalf("store %s: the test reads stores with string keys, not %v", spec.Name, spec.Serdes.Key)
	}
	c := ra.a.stores.Load()
	var key string
	pollFor(t, 30*time.Second, "store "+spec.Name+" holds no key", func() bool {
		switch spec.Type {
		case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType, pipeline.SessionStoreType:
			for p := range c.PartitionsOf(spec.Name) {
				if k, ok := firstWindowKey(t, c, spec, p); ok {
					key = k
					return true
				}
			}
			return false
		}
		addr, _ := ra.a.HTTPAddr(context.Background())
		resp, err := http.Get("http://" + addr + query.Path(query.RouteKeys, spec.Name, "") + "?limit=1")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page query.Page[query.KVItem]
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page.Items) == 0 {
			return false
		}
		key, _ = page.Items[0].Key.(string)
		return true
	})
	return key
}

func firstWindowKey(t *testing.T, c *query.Catalog, spec pipeline.StoreSpec, p int32) (string, bool) {
	t.Helper()
	var it interface {
		Next() bool
		Key() []byte
		Close()
	}
	if spec.Type == pipeline.SessionStoreType {
		s, err := c.DB.SessionStore(spec, p)
		if err != nil {
			t.Fatal(err)
		}
		it = s.View(state.ReadCommitted).FetchRange(nil, nil, false)
	} else {
		s, err := c.DB.WindowStore(spec, p)
		if err != nil {
			t.Fatal(err)
		}
		it = s.View(state.ReadCommitted).All(false)
	}
	defer it.Close()
	if !it.Next() {
		return "", false
	}
	return string(it.Key()), true
}

// checkNoOverflow fails when the page is wider than the window, a card's content wider than
// the card, or the graph wider than its box.
func checkNoOverflow(t *testing.T, ctx context.Context, width int64) {
	t.Helper()
	over, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
	  const out = [];
	  const wide = (what, e) => { if (e.scrollWidth > e.clientWidth) out.push(what + " is " + e.scrollWidth + " px wide in " + e.clientWidth); };
	  wide("the page", document.documentElement);
	  wide("the body", document.body);
	  for (const c of document.querySelectorAll(".card")) wide("card #" + c.id, c);
	  const g = document.getElementById("graph").getBoundingClientRect(), box = document.getElementById("graph-wrap").getBoundingClientRect();
	  if (g.right > box.right + 1 || g.left < box.left - 1) out.push("the graph (" + g.left + " to " + g.right + ") is cut by its box (" + box.left + " to " + box.right + ")");
	  return out; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(over) > 0 {
		t.Fatalf("at %d px: %s", width, strings.Join(over, "; "))
	}
}

// checkJS evaluates expr once and fails unless it returns true.
func checkJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil || !ok {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s: not so (%s; error %v):\n%.3000s", what, expr, err, html)
	}
}
