package demo

import (
	"fmt"
	"time"
)

// purchases feeds scripts/purchases.lua: an Avro purchase every tick on "purchases",
// keyed by purchase id and written with the example's own schema (purchase.avsc next to
// the script), as the shop's checkout service would write it. Every fifth is cancelled,
// every third carries a coupon, and the ids count from 2^53 so that the exact 64-bit ids of
// docs/serdes.md show.
func init() {
	customers := []string{"ann", "bob", "cleo", "dee"}
	skus := []string{"pen", "ink", "paper", "stapler"}
	prices := map[string]float64{"pen": 1.5, "ink": 4, "paper": 3.25, "stapler": 7}
	register("purchases", Feeder{
		Topics:      []string{"purchases"},
		Every:       500 * time.Millisecond,
		ValueSchema: "purchase.avsc",
		Tick: func(i int, now time.Time) []Record {
			status := "PAID"
			switch {
			case i%5 == 4:
				status = "CANCELLED"
			case i%2 == 1:
				status = "PLACED"
			}
			var items []any
			for j := range 1 + i%3 {
				sku := skus[(i+j)%len(skus)]
				items = append(items, map[string]any{"sku": sku, "quantity": int64(1 + (i+j)%4), "price": prices[sku]})
			}
			var coupon any
			if i%3 == 0 {
				coupon = "WELCOME"
			}
			id := int64(1)<<53 + int64(i)
			return []Record{{Topic: "purchases", Key: fmt.Appendf(nil, "p-%d", id), Data: map[string]any{
				"id": id, "customer": customers[i%len(customers)], "status": status, "items": items,
				"coupon": coupon, "placedAt": now.UnixMilli(),
			}}}
		},
	})
}
