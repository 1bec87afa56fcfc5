package demo

import (
	"encoding/binary"
	"time"
)

// clicks feeds scripts/clicks.lua: a click a tick on "clicks" (keyed by user, the item as
// the value), the prices of every item at the first tick, and a price change on "prices"
// every fourth tick, the stoat's first (keyed by item, cents as a long).
func init() {
	users := []string{"alice", "bob", "carol"}
	items := []string{"stoat", "otter", "ferret"}
	base := map[string]int64{"stoat": 1200, "otter": 1500, "ferret": 900}
	price := func(item string, change int) Record {
		return Record{Topic: "prices", Key: []byte(item), Value: binary.BigEndian.AppendUint64(nil, uint64(base[item]+int64(change%5)*25))}
	}
	register("clicks", Feeder{
		Topics: []string{"clicks", "prices"},
		Every:  500 * time.Millisecond,
		Tick: func(i int, _ time.Time) []Record {
			out := []Record{{Topic: "clicks", Key: []byte(users[i%len(users)]), Value: []byte(items[(i/2)%len(items)])}}
			switch {
			case i == 0:
				for _, item := range items {
					out = append(out, price(item, 0))
				}
			case i%4 == 0:
				out = append(out, price(items[(i/4-1)%len(items)], i/4))
			}
			return out
		},
	})
}
