// Command georank is a Quarry ranker plugin for a food-delivery catalogue:
// it boosts items that are open now, nearby and highly rated, using the
// request's context ({"lat": 51.5, "lon": -0.12, "hour": 20}) and the
// items' stored fields (location, open_hour, close_hour, rating).
//
// Configuration (all optional):
//
//	{"open_boost": 1.0, "distance_km": 5, "rating_weight": 0.2}
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o georank.wasm .
package main

import (
	"encoding/json"
	"math"

	"github.com/quarrysearch/quarry/sdk"
)

type config struct {
	OpenBoost    float64 `json:"open_boost"`
	DistanceKM   float64 `json:"distance_km"`
	RatingWeight float64 `json:"rating_weight"`
}

var cfg *config

func load() error {
	if cfg != nil {
		return nil
	}
	c := config{OpenBoost: 1, DistanceKM: 5, RatingWeight: 0.2}
	if b := sdk.Config(); len(b) > 0 {
		if err := json.Unmarshal(b, &c); err != nil {
			return err
		}
	}
	cfg = &c
	return nil
}

type where struct {
	Lat  *float64 `json:"lat"`
	Lon  *float64 `json:"lon"`
	Hour *int     `json:"hour"`
}

// km is the great-circle distance between two points.
func km(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dp, dl := (lat2-lat1)*math.Pi/180, (lon2-lon1)*math.Pi/180
	a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return 2 * r * math.Asin(math.Sqrt(a))
}

func open(hour, from, to int) bool {
	if from <= to {
		return hour >= from && hour < to
	}
	return hour >= from || hour < to // past midnight
}

// Rank multiplies each candidate's score by its business boosts.
func Rank(r *sdk.RankRequest) error {
	if err := load(); err != nil {
		return err
	}
	var w where
	if len(r.Context) > 0 {
		if err := json.Unmarshal(r.Context, &w); err != nil {
			return err
		}
	}
	rating, openHour, closeHour, location := r.Field("rating"), r.Field("open_hour"), r.Field("close_hour"), r.Field("location")
	for _, c := range r.Candidates {
		boost := 1.0
		if rating, ok := c.NumberOf(rating); ok {
			boost += cfg.RatingWeight * (rating - 3)
		}
		if w.Hour != nil {
			from, ok1 := c.NumberOf(openHour)
			to, ok2 := c.NumberOf(closeHour)
			if ok1 && ok2 && open(*w.Hour, int(from), int(to)) {
				boost += cfg.OpenBoost
			}
		}
		if w.Lat != nil && w.Lon != nil {
			if loc := c.NumbersOf(location); len(loc) == 2 { // a geopoint: [lon, lat]
				boost += cfg.DistanceKM / (cfg.DistanceKM + km(*w.Lat, *w.Lon, loc[1], loc[0]))
			}
		}
		c.Score *= boost
	}
	return nil
}

func init() { sdk.Ranker(Rank) }

func main() {}
