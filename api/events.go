package api

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// User event actions (UserEvent.ActionName).
const (
	ActionClick     = "click"
	ActionAddToCart = "add_to_cart"
	ActionPurchase  = "purchase"
	ActionDwell     = "dwell"
)

// Actions lists the actions a UserEvent may have.
var Actions = []string{ActionClick, ActionAddToCart, ActionPurchase, ActionDwell}

// MaxEventsPerRequest caps the events of one events request.
const MaxEventsPerRequest = 1000

// UserEvent is something a user did with a search result: a click, an
// add-to-cart, a purchase, or time spent on it (dwell). Its shape is
// OpenSearch's User Behavior Insights event where that costs nothing
// (action_name, query_id, client_id, session_id, timestamp,
// event_attributes.object.object_id, event_attributes.position.ordinal),
// plus user_query, the text searched, which UBI keeps in its query record.
type UserEvent struct {
	// ActionName is click, add_to_cart, purchase or dwell.
	ActionName string `json:"action_name"`
	// QueryID is the search response's query_id.
	QueryID string `json:"query_id"`
	// UserQuery is the text the user searched (the request's q).
	UserQuery string `json:"user_query"`
	ClientID  string `json:"client_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Timestamp is when it happened (default: when it was received).
	Timestamp       time.Time       `json:"timestamp,omitzero"`
	EventAttributes EventAttributes `json:"event_attributes"`
	// Index and Team are set by Quarry when it stores the event.
	Index string `json:"index,omitempty"`
	Team  string `json:"team,omitempty"`
}

// EventAttributes say which result the event is about.
type EventAttributes struct {
	Object   EventObject   `json:"object"`
	Position EventPosition `json:"position"`
	// DwellTime, for a dwell event, is the seconds the user spent on the
	// result.
	DwellTime float64 `json:"dwell_time,omitempty"`
}

// EventObject is the document an event is about.
type EventObject struct {
	ObjectID string `json:"object_id"`
	// ObjectIDField names the field ObjectID is the value of (Quarry: "id").
	ObjectIDField string `json:"object_id_field,omitempty"`
}

// EventPosition is where the result was shown.
type EventPosition struct {
	// Ordinal is the result's rank in the response, from 1.
	Ordinal int `json:"ordinal"`
}

// Validate checks an event, naming what is wrong.
func (e *UserEvent) Validate() error {
	switch {
	case !slices.Contains(Actions, e.ActionName):
		return BadRequest("action_name must be one of %s, got %q", strings.Join(Actions, ", "), e.ActionName)
	case e.QueryID == "" || len(e.QueryID) > 128:
		return BadRequest("query_id is required (the search response's query_id), at most 128 bytes")
	case strings.TrimSpace(e.UserQuery) == "":
		return BadRequest("user_query is required: the text the user searched")
	case len(e.UserQuery) > DefaultLimits.MaxQBytes:
		return BadRequest("user_query is over %d bytes", DefaultLimits.MaxQBytes)
	case e.EventAttributes.Object.ObjectID == "" || len(e.EventAttributes.Object.ObjectID) > 512:
		return BadRequest("event_attributes.object.object_id is required: the document's id (at most 512 bytes)")
	case e.EventAttributes.Position.Ordinal < 1 || e.EventAttributes.Position.Ordinal > MaxWindow:
		return BadRequest("event_attributes.position.ordinal must be the result's rank, 1 to %d, got %d", MaxWindow, e.EventAttributes.Position.Ordinal)
	case e.EventAttributes.DwellTime < 0 || e.EventAttributes.DwellTime > 86400:
		return BadRequest("event_attributes.dwell_time must be 0 to 86400 seconds, got %g", e.EventAttributes.DwellTime)
	case e.ActionName == ActionDwell && e.EventAttributes.DwellTime == 0:
		return BadRequest("a dwell event needs event_attributes.dwell_time (seconds)")
	case len(e.ClientID) > 256 || len(e.SessionID) > 256:
		return BadRequest("client_id and session_id are at most 256 bytes")
	}
	for name, v := range map[string]string{"query_id": e.QueryID, "user_query": e.UserQuery, "client_id": e.ClientID, "session_id": e.SessionID,
		"event_attributes.object.object_id": e.EventAttributes.Object.ObjectID} {
		if !utf8.ValidString(v) {
			return BadRequest("%s is not valid UTF-8", name)
		}
	}
	if !e.Timestamp.IsZero() && e.Timestamp.After(time.Now().Add(time.Hour)) {
		return BadRequest("timestamp %s is in the future", e.Timestamp.Format(time.RFC3339))
	}
	return nil
}

// FromEventsRequest asks for a judgement list built from an index's user
// events (admin judgements.from-events; docs/relevance.md, "Judgements
// from events").
type FromEventsRequest struct {
	// Since is how far back to read, a Go duration ("168h"; default: every
	// event kept).
	Since string `json:"since,omitempty"`
	// MinQueries leaves out texts searched (distinct query ids with
	// events) fewer times (default 5).
	MinQueries int `json:"min_queries,omitempty"`
	// Eta is the position bias's power: a result at rank p is examined
	// with probability (1/p)^Eta (default 1).
	Eta float64 `json:"eta,omitempty"`
}

// FromEventsReport is a judgement list built from events.
type FromEventsReport struct {
	Index   string        `json:"index"`
	Events  int           `json:"events"`
	Queries []JudgedQuery `json:"queries"`
	// Skipped counts texts left out for too few searches.
	Skipped int `json:"skipped"`
}

// EventsResult is the answer to an events request.
type EventsResult struct {
	Accepted int `json:"accepted"`
}

// describeEvent names event i in an error.
func describeEvent(i int, err error) error { return BadRequest("event %d: %v", i+1, err) }

// ValidateEvents checks a batch of events; the error names the first bad
// one (from 1).
func ValidateEvents(evs []UserEvent) error {
	if len(evs) == 0 {
		return BadRequest("no events")
	}
	if len(evs) > MaxEventsPerRequest {
		return BadRequest("%d events, over the limit of %d a request", len(evs), MaxEventsPerRequest)
	}
	for i := range evs {
		if err := evs[i].Validate(); err != nil {
			return describeEvent(i, err)
		}
	}
	return nil
}
