package meta

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/backoff"
)

// Timing of an Ordered follower's consumer re-creation.
const (
	// orderedAttempt bounds each request that makes the consumer: one sent
	// while the JetStream meta leadership moves gets no answer, and is
	// sent again after this rather than after nats.go's fixed 10 s.
	orderedAttempt = time.Second
	// orderedBackoff is the first pause between attempts; it doubles up to
	// orderedMaxBackoff.
	orderedBackoff    = 50 * time.Millisecond
	orderedMaxBackoff = time.Second
)

// OrderedConfig says what an Ordered follower reads.
type OrderedConfig struct {
	// FilterSubjects are the subjects read (all if none).
	FilterSubjects []string
	// DeliverPolicy is where the first consumer starts (jetstream's
	// policies; DeliverByStartSequencePolicy with OptStartSeq). Once a
	// message has been read, every consumer made again starts after the
	// last message read.
	DeliverPolicy jetstream.DeliverPolicy
	OptStartSeq   uint64
	// Heartbeat is how often the server tells an idle follower it is
	// there; after two missed the consumer is made again (default 1 s).
	Heartbeat time.Duration
	// MaxMessages is how many messages are pulled at once (default
	// jetstream's, 500).
	MaxMessages int
}

// Ordered reads a stream in order, every message once, for as long as a
// role runs: what nats.go's ordered consumer does, with the same kind of
// consumer (ephemeral, one replica, in memory, no acks), but made again
// without its fixed waits. nats.go's ordered consumer, when it loses its
// consumer (the connection moved to another cluster member, heartbeats
// stopped), waits a second and then up to 10 s for the answer to the
// request that makes it again; sent while the meta leadership moves (the
// member lost was the meta leader), that request is never answered, and
// the follower stalled for about 11 s (TestFaultNATSClusterLosesNode).
// Ordered tries again every orderedAttempt, from a short backoff, as
// soon as the connection is back, heartbeats stop, the consumer is gone,
// or a message arrives out of order.
type Ordered struct {
	js      jetstream.JetStream
	stream  string
	cfg     OrderedConfig
	handler func(jetstream.Msg)
	prefix  string

	ctx    context.Context
	cancel context.CancelFunc
	// handling is held while handler runs: a consumer made again starts
	// after the last message passed on, and its first message must wait
	// until the old consumer's handler call has returned, so that handler
	// sees every message in order, one at a time.
	handling sync.Mutex
	resets   chan struct{} // buffered 1: a reset is due
	done     chan struct{} // closed once the follower stopped

	mu       sync.Mutex
	serial   int
	dseq     uint64 // consumer sequence of the last message read
	next     uint64 // stream sequence to start from when made again (0: cfg's)
	cons     jetstream.Consumer
	cc       jetstream.ConsumeContext
	started  bool
	resetsNo int // consumers made again
}

// NewOrdered makes the follower's first consumer (waiting as long as ctx
// allows, trying again every orderedAttempt) and returns it with the
// consumer's info (NumPending: how many messages are there to read). Call
// Start to deliver messages to handler, which is called one message at a
// time, in stream order; Stop ends it.
func NewOrdered(ctx context.Context, js jetstream.JetStream, stream string, cfg OrderedConfig, handler func(jetstream.Msg)) (*Ordered, *jetstream.ConsumerInfo, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	o := &Ordered{js: js, stream: stream, cfg: cfg, handler: handler, prefix: nats.NewInbox()[len(nats.InboxPrefix):],
		resets: make(chan struct{}, 1), done: make(chan struct{})}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.create(ctx); err != nil {
		o.cancel()
		return nil, nil, fmt.Errorf("ordered consumer on %s: %w", stream, err)
	}
	info := o.cons.CachedInfo()
	return o, info, nil
}

// config is the consumer to make now; o.mu is held.
func (o *Ordered) config() jetstream.ConsumerConfig {
	c := jetstream.ConsumerConfig{
		Name:              fmt.Sprintf("%s_%d", o.prefix, o.serial),
		DeliverPolicy:     o.cfg.DeliverPolicy,
		OptStartSeq:       o.cfg.OptStartSeq,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 5 * time.Minute,
		Replicas:          1,
		MemoryStorage:     true,
	}
	if o.next > 0 {
		c.DeliverPolicy, c.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.next
	}
	if len(o.cfg.FilterSubjects) == 1 {
		c.FilterSubject = o.cfg.FilterSubjects[0]
	} else {
		c.FilterSubjects = o.cfg.FilterSubjects
	}
	return c
}

// create makes a new consumer, trying until ctx or the follower ends; o.mu
// is held.
func (o *Ordered) create(ctx context.Context) error {
	o.serial++
	o.dseq = 0
	cfg := o.config()
	// Either context ends the pauses: the caller's or the follower's.
	pctx, endPauses := context.WithCancel(ctx)
	defer endPauses()
	defer context.AfterFunc(o.ctx, endPauses)()
	pause := backoff.New(orderedBackoff, orderedMaxBackoff)
	for {
		actx, cancel := context.WithTimeout(ctx, orderedAttempt)
		cons, err := o.js.CreateOrUpdateConsumer(actx, o.stream, cfg)
		cancel()
		if err == nil {
			o.cons = cons
			return nil
		}
		if ctx.Err() != nil || o.ctx.Err() != nil {
			return fmt.Errorf("make consumer %s: %w", cfg.Name, err)
		}
		if pause.Wait(pctx) != nil {
			if ctx.Err() == nil {
				err = o.ctx.Err()
			}
			return fmt.Errorf("make consumer %s: %w", cfg.Name, err)
		}
	}
}

// Start delivers messages until Stop.
func (o *Ordered) Start() error {
	o.mu.Lock()
	err := o.consume()
	o.started = err == nil
	o.mu.Unlock()
	if err != nil {
		return err
	}
	status := o.js.Conn().StatusChanged(nats.CONNECTED, nats.RECONNECTING)
	go o.run(status)
	return nil
}

// consume starts pulling from the current consumer; o.mu is held.
func (o *Ordered) consume() error {
	serial := o.serial
	opts := []jetstream.PullConsumeOpt{jetstream.PullHeartbeat(o.cfg.Heartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
				errors.Is(err, jetstream.ErrConsumerNotFound) {
				o.reset(serial)
			}
		})}
	if o.cfg.MaxMessages > 0 {
		opts = append(opts, jetstream.PullMaxMessages(o.cfg.MaxMessages))
	}
	cc, err := o.cons.Consume(func(m jetstream.Msg) { o.deliver(serial, m) }, opts...)
	if err != nil {
		return fmt.Errorf("ordered consumer on %s: %w", o.stream, err)
	}
	o.cc = cc
	return nil
}

// deliver passes m on if it is the next message of consumer serial.
func (o *Ordered) deliver(serial int, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	o.handling.Lock()
	defer o.handling.Unlock()
	o.mu.Lock()
	if serial != o.serial || o.ctx.Err() != nil {
		o.mu.Unlock()
		return
	}
	if md.Sequence.Consumer != o.dseq+1 {
		o.mu.Unlock()
		o.reset(serial) // a message missed: start again after the last one read
		return
	}
	o.dseq, o.next = md.Sequence.Consumer, md.Sequence.Stream+1
	o.mu.Unlock()
	o.handler(m)
}

// reset asks for consumer serial to be made again (if it is the current).
func (o *Ordered) reset(serial int) {
	o.mu.Lock()
	current := serial == o.serial
	o.mu.Unlock()
	if !current {
		return
	}
	select {
	case o.resets <- struct{}{}:
	default:
	}
}

// run makes the consumer again whenever a reset is due or the connection
// is back, until Stop.
func (o *Ordered) run(status chan nats.Status) {
	defer close(o.done)
	defer o.js.Conn().RemoveStatusListener(status)
	lost := false
	for {
		select {
		case <-o.ctx.Done():
			o.mu.Lock()
			o.cc.Stop()
			o.mu.Unlock()
			return
		case s := <-status:
			if s == nats.RECONNECTING {
				lost = true
				continue
			}
			if !lost {
				continue
			}
			lost = false
		case <-o.resets:
		}
		o.mu.Lock()
		o.cc.Stop()
		old := o.cons.CachedInfo().Name
		go func() { // best effort: it ends by itself once idle
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			o.js.DeleteConsumer(ctx, o.stream, old)
		}()
		err := o.create(o.ctx)
		if err == nil {
			o.resetsNo++
			err = o.consume()
		}
		o.mu.Unlock()
		if err != nil && o.ctx.Err() == nil {
			// Not made (the follower stops meanwhile, or Consume
			// refused): try again shortly.
			time.AfterFunc(orderedBackoff, func() { o.reset(o.currentSerial()) })
		}
	}
}

func (o *Ordered) currentSerial() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.serial
}

// Resets is how many times the consumer was made again.
func (o *Ordered) Resets() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.resetsNo
}

// Stop stops the follower: no message is delivered once it returns but
// one that handler is being given.
func (o *Ordered) Stop() {
	o.cancel()
	o.mu.Lock()
	started := o.started
	o.mu.Unlock()
	if started {
		<-o.done
	}
}
