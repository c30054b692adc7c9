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

type where struct {
	Lat  *float64 `json:"lat"`
	Lon  *float64 `json:"lon"`
	Hour *int     `json:"hour"`
}

// KM is the great-circle distance between two points.
func KM(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dp, dl := (lat2-lat1)*math.Pi/180, (lon2-lon1)*math.Pi/180
	a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
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

// Rank multiplies each candidate's score by its business boosts.
func (g *Ranker) Rank(r *sdk.RankRequest) error {
	var w where
	if len(r.Context) > 0 {
		if err := json.Unmarshal(r.Context, &w); err != nil {
			return err
		}
	}
	cfg := &g.cfg
	rating, openHour, closeHour, location := r.Field("rating"), r.Field("open_hour"), r.Field("close_hour"), r.Field("location")
	var loc [2]float64 // each candidate's location, read without allocating
	for _, c := range r.Candidates {
		boost := 1.0
		if rating, ok := c.NumberOf(rating); ok {
			boost += cfg.RatingWeight * (rating - 3)
		}
		if w.Hour != nil {
			from, ok1 := c.NumberOf(openHour)
			to, ok2 := c.NumberOf(closeHour)
			if ok1 && ok2 && Open(*w.Hour, int(from), int(to)) {
				boost += cfg.OpenBoost
			}
		}
		if w.Lat != nil && w.Lon != nil {
			if loc := c.AppendNumbersOf(loc[:0], location); len(loc) == 2 { // a geopoint: [lon, lat]
				boost += cfg.DistanceKM / (cfg.DistanceKM + KM(*w.Lat, *w.Lon, loc[1], loc[0]))
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
