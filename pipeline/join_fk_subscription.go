package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// fkInstruction is what a subscription asks of the other table's side (Kafka Streams'
// SubscriptionWrapper.Instruction, in the order of its byte values).
type fkInstruction byte

const (
	deleteNoPropagate fkInstruction = iota
	deleteAndPropagate
	propagateNullIfNoValue
	propagateOnlyIfValue
)

// fkSubscription is a row's subscription to a foreign key, on its way through the
// registration topic and as the subscription store keeps it (SubscriptionWrapper).
type fkSubscription struct {
	// hash is murmur3Hash128 of the row's serialised new value; nil for a deleted row.
	hash *[2]uint64
	ins  fkInstruction
	pk   any
	// partition is the row's partition, where the answer goes (KAFKA-13769).
	partition int32
}

// fkResponse is the other table's answer to a subscription, through the response topic
// (SubscriptionResponseWrapper): the hash of the row value it answers and the other table's
// value (nil: none).
type fkResponse struct {
	hash      *[2]uint64
	foreign   any
	partition int32
}

// subscriptionWrapperVersion is the SubscriptionWrapper version written (1: with the
// primary partition).
const subscriptionWrapperVersion = 1

// appendSubscription appends s in Kafka Streams' SubscriptionWrapperSerde layout (version 1):
// the version byte (its top bit set when there is no hash), the instruction, the two hash
// longs when there is a hash, the serialised primary key, and the primary partition.
func appendSubscription(b []byte, s *fkSubscription, pk []byte) []byte {
	version := byte(subscriptionWrapperVersion)
	if s.hash == nil {
		version |= 0x80
	}
	b = append(b, version, byte(s.ins))
	if s.hash != nil {
		b = binary.BigEndian.AppendUint64(b, s.hash[0])
		b = binary.BigEndian.AppendUint64(b, s.hash[1])
	}
	b = append(b, pk...)
	return binary.BigEndian.AppendUint32(b, uint32(s.partition))
}

var errSubscriptionLayout = errors.New("not a subscription of Kafka Streams' layout")

// parseSubscription reads what appendSubscription wrote, but the primary key, which the
// store key holds too: the hash and the primary partition.
func parseSubscription(b []byte) (hash *[2]uint64, partition int32, err error) {
	if len(b) < 2+4 {
		return nil, 0, errSubscriptionLayout
	}
	if b[0]&0x7f != subscriptionWrapperVersion {
		return nil, 0, fmt.Errorf("subscription version %d: %w", b[0]&0x7f, errSubscriptionLayout)
	}
	if b[0]&0x80 == 0 {
		if len(b) < 2+16+4 {
			return nil, 0, errSubscriptionLayout
		}
		hash = &[2]uint64{binary.BigEndian.Uint64(b[2:]), binary.BigEndian.Uint64(b[10:])}
	}
	return hash, int32(binary.BigEndian.Uint32(b[len(b)-4:])), nil
}

// subscriptionKey is Kafka Streams' CombinedKey layout, the subscription store's keys: the
// length prefix keeps one foreign key's subscriptions from matching a prefix scan of a
// shorter foreign key.
func subscriptionKey(fk, pk []byte) []byte {
	k := make([]byte, 4, 4+len(fk)+len(pk))
	binary.BigEndian.PutUint32(k, uint32(len(fk)))
	return append(append(k, fk...), pk...)
}

func subscriptionPrefix(fk []byte) []byte { return subscriptionKey(fk, nil) }

func sameHash(a, b *[2]uint64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
