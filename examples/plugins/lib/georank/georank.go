// Package georank is the logic of the georank ranker plugin
// (examples/plugins/georank, its WebAssembly build) for a food-delivery
// catalogue: it boosts items that are open now, nearby and highly rated,
// using the request's context ({"lat": 51.5, "lon": -0.12, "hour": 20})
// and the items' stored fields (location, open_hour, close_hour, rating).
//
// Configuration (all optional):
//
//	{"open_boost": 1.0, "distance_km": 5, "rating_weight": 0.2}
//
// The logic is a library so that the same code also runs natively, next to
// its WebAssembly build (Hooks, for plugins.LoadNative and `quarry bench`).
package georank

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/quarrysearch/quarry/sdk"
)

// Config is the plugin's configuration.
type Config struct {
	OpenBoost    float64 `json:"open_boost"`
	DistanceKM   float64 `json:"distance_km"`
	RatingWeight float64 `json:"rating_weight"`
}

// DefaultConfig is the configuration's defaults.
var DefaultConfig = Config{OpenBoost: 1, DistanceKM: 5, RatingWeight: 0.2}

// Ranker applies the business boosts. It is read only once made, so calls
// may run concurrently.
type Ranker struct {
	cfg Config
}

// New makes a Ranker from a configuration (JSON; what it leaves out keeps
// DefaultConfig's value).
func New(config []byte) (*Ranker, error) {
	c := DefaultConfig
	if len(config) > 0 {
		if err := json.Unmarshal(config, &c); err != nil {
			return nil, fmt.Errorf("georank configuration: %w", err)
		}
	}
	return &Ranker{cfg: c}, nil
}

// KM is the great-circle distance between two points (haversine).
func KM(lat1, lon1, lat2, lon2 float64) float64 {
	return newOrigin(lat1, lon1).km(lat2, lon2)
}

// origin is the user's place, with what KM computes of it once.
type origin struct {
	lat, lon, cosLat float64
}

func newOrigin(lat, lon float64) origin {
	return origin{lat: lat, lon: lon, cosLat: math.Cos(lat * math.Pi / 180)}
}

// km is KM from o: one sine of each half difference, squared, not two.
func (o origin) km(lat, lon float64) float64 {
	const r = 6371.0
	sp := math.Sin((lat - o.lat) * math.Pi / 360)
	sl := math.Sin((lon - o.lon) * math.Pi / 360)
	a := sp*sp + o.cosLat*math.Cos(lat*math.Pi/180)*sl*sl
	return 2 * r * math.Asin(math.Sqrt(a))
}

// Open reports whether a place open from hour from to hour to is open at
// hour (to before from: it closes past midnight).
func Open(hour, from, to int) bool {
	if from <= to {
		return hour >= from && hour < to
	}
	return hour >= from || hour < to // past midnight
}

// Rank multiplies each candidate's score by its business boosts. The
// context's members are read with sdk.ContextNumber (in WebAssembly,
// json.Unmarshal of the context cost more than the rest of the call).
func (g *Ranker) Rank(r *sdk.RankRequest) error {
	lat, hasLat, err := sdk.ContextNumber(r.Context, "lat")
	if err != nil {
		return err
	}
	lon, hasLon, err := sdk.ContextNumber(r.Context, "lon")
	if err != nil {
		return err
	}
	hour, hasHour, err := sdk.ContextNumber(r.Context, "hour")
	if err != nil {
		return err
	}
	if hasHour && (hour != math.Trunc(hour) || math.Abs(hour) > math.MaxInt32) {
		return fmt.Errorf("context: hour %v is not a whole number", hour)
	}
	near := hasLat && hasLon
	o := newOrigin(lat, lon)
	cfg := &g.cfg
	rating, openHour, closeHour, location := r.Field("rating"), r.Field("open_hour"), r.Field("close_hour"), r.Field("location")
	var loc [2]float64 // each candidate's location, read without allocating
	for _, c := range r.Candidates {
		boost := 1.0
		if rating, ok := c.NumberOf(rating); ok {
			boost += cfg.RatingWeight * (rating - 3)
		}
		if hasHour {
			from, ok1 := c.NumberOf(openHour)
			to, ok2 := c.NumberOf(closeHour)
			if ok1 && ok2 && Open(int(hour), int(from), int(to)) {
				boost += cfg.OpenBoost
			}
		}
		if near {
			if loc := c.AppendNumbersOf(loc[:0], location); len(loc) == 2 { // a geopoint: [lon, lat]
				boost += cfg.DistanceKM / (cfg.DistanceKM + o.km(loc[1], loc[0]))
			}
		}
		c.Score *= boost
	}
	return nil
}

// Hooks returns the ranker's hooks for a configuration, with their own
// state: one per instance of the plugin run natively.
func Hooks(config []byte) (*sdk.Hooks, error) {
	g, err := New(config)
	if err != nil {
		return nil, err
	}
	return &sdk.Hooks{Rank: g.Rank}, nil
}
