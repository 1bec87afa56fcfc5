package demo

import (
	"encoding/json"
	"time"
)

// orders feeds scripts/enrich.lua: the customers (a KTable) and the products (a
// GlobalKTable) first, then an order a tick, keyed by customer id. Every seventh order is
// of a customer nobody knows (it comes out with a null customer) and every eleventh of a
// product nobody sells (the inner join on the products drops it).
func init() {
	type customer struct {
		Name string `json:"name"`
	}
	type product struct {
		Name  string  `json:"name"`
		Price float64 `json:"price"`
	}
	type order struct {
		Product  string `json:"product"`
		Quantity int    `json:"quantity"`
	}
	customers := []string{"c1", "c2", "c3"}
	names := map[string]customer{"c1": {"Ann"}, "c2": {"Bob"}, "c3": {"Cleo"}}
	productIDs := []string{"p1", "p2", "p3"}
	products := map[string]product{"p1": {"pen", 2}, "p2": {"ink", 5.5}, "p3": {"paper", 3}}
	jsonOf := func(v any) []byte {
		b, _ := json.Marshal(v) // cannot fail: structs of strings and numbers
		return b
	}
	register("orders", Feeder{
		Topics: []string{"customers", "products", "orders"},
		Every:  500 * time.Millisecond,
		Tick: func(i int, _ time.Time) []Record {
			if i == 0 {
				var out []Record
				for _, id := range customers {
					out = append(out, Record{Topic: "customers", Key: []byte(id), Value: jsonOf(names[id])})
				}
				for _, id := range productIDs {
					out = append(out, Record{Topic: "products", Key: []byte(id), Value: jsonOf(products[id])})
				}
				return out
			}
			cust, prod := customers[i%len(customers)], productIDs[i%len(productIDs)]
			if i%7 == 0 {
				cust = "c9"
			}
			if i%11 == 0 {
				prod = "p9"
			}
			return []Record{{Topic: "orders", Key: []byte(cust), Value: jsonOf(order{Product: prod, Quantity: 1 + i%4})}}
		},
	})
}
