package store

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxTransactItems is the most items DynamoDB takes in one transaction,
// and maxTransactBytes the most bytes of them.
const (
	maxTransactItems = 100
	maxTransactBytes = 4 << 20
)

// Grouped is ctx as one invocation's many starts write the table with it
// (the firing's slots): each new session's transaction (its session, its
// ledger row and what goes beside them) is sent together with those of
// other starts waiting at the same moment, in one TransactWriteItems of
// up to maxTransactItems items, at most sends of them at a time. A start
// waits only while every send is under way, so a lone start goes out at
// once, alone; under a burst, the SDK's and the HTTP client's work per
// request is shared by the starts of a transaction.
//
// Each start's answer is its own: a transaction canceled by some starts'
// items is answered to them with their own items' reasons, as if each
// had been sent alone, and is sent again without them for the others,
// whose writes it did not make. An answer that names no item (a fault the
// SDK gave up on) is every start's; one that no retry mends (a validation
// error) sends each start alone, so that it is answered to the start it
// is about. The transactions go out with ctx, the invocation's (its
// requests counted there), and end with the starts: Grouped keeps no
// goroutine once every start has its answer. The group travels in the
// context, so that the executor and the runs built once per execution
// environment write through it. A transaction holds at most
// maxTransactItems items and maxTransactBytes of them: a firing's start
// is a few KB (a session, a row, a trigger's update and its run, a
// prompt), but a session's environment snapshot may be 200 KB.
func (t *Table) Grouped(ctx context.Context, sends int) context.Context {
	return context.WithValue(ctx, groupKey{}, &group{ctx: ctx, client: t.client, free: max(1, sends)})
}

// groupKey is the context key of a Grouped context's group.
type groupKey struct{}

// groupOf is ctx's group, or nil.
func groupOf(ctx context.Context) *group {
	g, _ := ctx.Value(groupKey{}).(*group)
	return g
}

// group gathers the transactions of a Grouped table.
type group struct {
	ctx    context.Context
	client *dynamodb.Client
	mu     sync.Mutex
	queue  []*member
	free   int // sends that may start now
}

// member is one start's transaction, waiting for its answer.
type member struct {
	items  []types.TransactWriteItem
	size   int // the items' bytes, as DynamoDB counts them
	answer chan error
}

// transact sends items as one transaction, through ctx's group when it
// is Grouped: the answer is the SDK's as it would be for items sent alone.
func (t *Table) transact(ctx context.Context, items []types.TransactWriteItem) error {
	if g := groupOf(ctx); g != nil {
		return g.transact(items)
	}
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

func (g *group) transact(items []types.TransactWriteItem) error {
	m := &member{items: items, size: transactSize(items), answer: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, m)
	if g.free > 0 {
		g.free--
		go g.send(g.take())
	}
	g.mu.Unlock()
	return <-m.answer
}

// take is the queue's first members that fit in one transaction, taken
// off it. The caller holds mu.
func (g *group) take() []*member {
	n, items, size := 0, 0, 0
	for n < len(g.queue) && (n == 0 || items+len(g.queue[n].items) <= maxTransactItems && size+g.queue[n].size <= maxTransactBytes) {
		items += len(g.queue[n].items)
		size += g.queue[n].size
		n++
	}
	taken := g.queue[:n:n]
	g.queue = g.queue[n:]
	return taken
}

// send sends batch, then what waits in the queue meanwhile, until it is
// empty.
func (g *group) send(batch []*member) {
	for {
		g.commit(batch)
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.free++
			g.mu.Unlock()
			return
		}
		batch = g.take()
		g.mu.Unlock()
	}
}

// commit sends batch as one transaction and answers each member: nil
// when it went in; its own items' cancellation reasons when they canceled
// it, after which the members whose items were not refused are sent again
// together; the fault, when the SDK gave up on one that names no item.
// Any other answer sends each member alone.
func (g *group) commit(batch []*member) {
	for len(batch) > 1 {
		var items []types.TransactWriteItem
		for _, m := range batch {
			items = append(items, m.items...)
		}
		_, err := g.client.TransactWriteItems(g.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			answer(batch, nil)
			return
		}
		unrefused := refuse(batch, err)
		if len(unrefused) == len(batch) && refusalOf(err).retryable {
			answer(batch, err)
			return
		}
		if len(unrefused) == len(batch) {
			break // not said which member it is about
		}
		batch = unrefused
	}
	for _, m := range batch {
		_, err := g.client.TransactWriteItems(g.ctx, &dynamodb.TransactWriteItemsInput{TransactItems: m.items})
		m.answer <- err
	}
}

// refuse answers the members of batch whose items the cancellation err
// refused, each with its own items' reasons, and returns the others: the
// whole batch when err names no refused item.
func refuse(batch []*member, err error) []*member {
	var canceled *types.TransactionCanceledException
	total := 0
	for _, m := range batch {
		total += len(m.items)
	}
	if !errors.As(err, &canceled) || len(canceled.CancellationReasons) != total {
		return batch // not this transaction's reasons
	}
	left := canceled.CancellationReasons
	var unrefused []*member
	for _, m := range batch {
		own := left[:len(m.items):len(m.items)]
		left = left[len(m.items):]
		if refusedItem(own) {
			m.answer <- &types.TransactionCanceledException{Message: canceled.Message, CancellationReasons: own}
		} else {
			unrefused = append(unrefused, m)
		}
	}
	return unrefused
}

// refusedItem reports whether a reason refuses its item.
func refusedItem(own []types.CancellationReason) bool {
	for _, c := range own {
		if why, known := reasons[aws.ToString(c.Code)]; !known || why != notRefused {
			return true
		}
	}
	return false
}

func answer(batch []*member, err error) {
	for _, m := range batch {
		m.answer <- err
	}
}

// transactSize is the bytes of a transaction's items as DynamoDB counts an
// item's size: its attributes' names and values (a number counted as its
// digits, over the exact figure of one byte per two digits).
func transactSize(items []types.TransactWriteItem) int {
	n := 0
	for _, it := range items {
		switch {
		case it.Put != nil:
			n += attrsSize(it.Put.Item)
		case it.Update != nil:
			n += attrsSize(it.Update.Key) + attrsSize(it.Update.ExpressionAttributeValues)
		case it.Delete != nil:
			n += attrsSize(it.Delete.Key)
		case it.ConditionCheck != nil:
			n += attrsSize(it.ConditionCheck.Key)
		}
	}
	return n
}

func attrsSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + attrSize(v)
	}
	return n
}

func attrSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return len(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberM:
		return 3 + attrsSize(x.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += 1 + attrSize(e)
		}
		return n
	}
	return 1
}
