// Package kfaketest holds what the Kafka-path tests of several packages do to a kfake
// broker.
package kfaketest

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HoldProduce makes c hold every produce request that writes to topic, unanswered, until
// release is called; held is closed when the first one is held. A broker answers the
// requests of one connection in order, so the requests behind a held one on its connection
// wait too.
func HoldProduce(c *kfake.Cluster, topic string) (release func(), held <-chan struct{}) {
	wake, first := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	c.ControlKey(kmsg.Produce.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		for _, t := range req.(*kmsg.ProduceRequest).Topics {
			if t.Topic == topic {
				once.Do(func() { close(first) })
				c.SleepControl(func() { <-wake })
				break
			}
		}
		return nil, nil, false
	})
	return func() { releaseOnce.Do(func() { close(wake) }) }, first
}
