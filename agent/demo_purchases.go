package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// The purchases demo feeds scripts/purchases.lua: an Avro purchase every tick, written with
// the example's own schema (purchase.avsc next to the script) through the application's
// schema registry, as the shop's checkout service would write it.
const (
	purchasesTopic  = "purchases"
	purchasesSchema = "purchase.avsc"
	purchasesEvery  = 500 * time.Millisecond
)

var (
	demoCustomers = []string{"ann", "bob", "cleo", "dee"}
	demoSKUs      = []string{"pen", "ink", "paper", "stapler"}
	demoPrices    = map[string]float64{"pen": 1.5, "ink": 4, "paper": 3.25, "stapler": 7}
)

// purchase is the demo's purchase i: every fifth is cancelled, every third carries a coupon,
// and the ids count from 2^53 so that the exact 64-bit ids of docs/serdes.md show.
func purchase(i int) (key string, value map[string]any) {
	status := "PAID"
	switch {
	case i%5 == 4:
		status = "CANCELLED"
	case i%2 == 1:
		status = "PLACED"
	}
	var items []any
	for j := range 1 + i%3 {
		sku := demoSKUs[(i+j)%len(demoSKUs)]
		items = append(items, map[string]any{"sku": sku, "quantity": int64(1 + (i+j)%4), "price": demoPrices[sku]})
	}
	var coupon any
	if i%3 == 0 {
		coupon = "WELCOME"
	}
	id := int64(1)<<53 + int64(i)
	return fmt.Sprintf("p-%d", id), map[string]any{
		"id": id, "customer": demoCustomers[i%len(demoCustomers)], "status": status, "items": items,
		"coupon": coupon, "placedAt": time.Now().UnixMilli(),
	}
}

// runPurchasesFeeder writes a purchase every tick until ctx ends.
func (a *Agent) runPurchasesFeeder(ctx context.Context, brokers []string) {
	serde, err := a.purchasesSerde()
	if err != nil {
		a.log.Error("purchases demo feeder", "err", err)
		return
	}
	cfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleProducer)
	if err != nil {
		a.log.Error("purchases demo feeder", "err", err)
		return
	}
	p, err := kafkaio.NewProducer(brokers, cfg)
	if err != nil {
		a.log.Error("purchases demo feeder", "err", err)
		return
	}
	defer p.Close()
	a.log.Info("the demo feeder writes an Avro purchase every tick", "topic", purchasesTopic, "every", purchasesEvery, "schema", purchasesSchema)
	t := time.NewTicker(purchasesEvery)
	defer t.Stop()
	for i := 0; ; i++ {
		key, value := purchase(i)
		b, err := serde.Serialize(purchasesTopic, nil, value)
		if err == nil {
			err = p.Send(purchasesTopic, -1, []byte(key), b, nil, time.Now().UnixMilli())
		}
		if err != nil {
			a.log.Warn("purchases demo feeder", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purchasesSerde writes with the purchase schema next to the first script.
func (a *Agent) purchasesSerde() (*schemas.Serde, error) {
	if a.schemas == nil {
		return nil, fmt.Errorf("the purchases demo writes Avro: set schema.registry.url (\"embedded\")")
	}
	path := filepath.Join(filepath.Dir(a.cfg.Scripts[0]), purchasesSchema)
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := a.schemas.New("avro", false, schemas.Spec{Schema: string(text), SchemaFile: path})
	if err != nil {
		return nil, err
	}
	return s.(*schemas.Serde), nil
}
