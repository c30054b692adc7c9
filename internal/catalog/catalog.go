package catalog

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"io"
)

// DefaultSeed is the seed the bundled demo file examples/catalog/menu.ndjson
// was generated with.
const DefaultSeed = 20261130

// DefaultSize is the number of items in the bundled demo file
// examples/catalog/menu.ndjson.
const DefaultSize = 20000

// Item is one menu item of one restaurant: one document of the demo `menu` index.
type Item struct {
	// ID is unique: "r" + restaurant number + "-i" + item number, e.g. "r0042-i07".
	ID string `json:"id"`
	// Name is the dish name as shown on the menu, e.g. "Spicy Dan Dan Noodles".
	Name string `json:"name"`
	// Description is one or two sentences naming the dish's main ingredients.
	Description string `json:"description"`
	// Restaurant is the restaurant's display name, e.g. "Golden Dragon Kitchen".
	Restaurant string `json:"restaurant"`
	// RestaurantID identifies the restaurant, e.g. "r0042"; it prefixes ID.
	RestaurantID string `json:"restaurant_id"`
	// Cuisine is the restaurant's cuisine, lowercase, e.g. "thai" or "middle eastern".
	Cuisine string `json:"cuisine"`
	// Tags are lowercase labels derived from the dish, in a fixed order:
	// spicy, vegetarian, vegan, gluten-free, dairy-free, halal, healthy,
	// kids, popular, new, breakfast, dessert, drink. Never nil.
	Tags []string `json:"tags"`
	// Price is in a notional single currency, rounded to cents.
	Price float64 `json:"price"`
	// Rating is the average customer rating, 1.0 to 5.0 with one decimal.
	Rating float64 `json:"rating"`
	// RatingCount is the number of ratings, at least 1.
	RatingCount int `json:"rating_count"`
	// OpenHour is the hour (0-23) the restaurant opens.
	OpenHour int `json:"open_hour"`
	// CloseHour is the hour (0-23) the restaurant closes; a value lower than
	// OpenHour means it closes after midnight.
	CloseHour int `json:"close_hour"`
	// City is the city the restaurant delivers in, e.g. "London".
	City string `json:"city"`
	// Location is the restaurant's position, within 15 km of the city centre.
	Location GeoPoint `json:"location"`
}

// GeoPoint is a latitude/longitude pair, in the shape bleve's geopoint field accepts.
type GeoPoint struct {
	// Lat is the latitude in degrees, six decimals.
	Lat float64 `json:"lat"`
	// Lon is the longitude in degrees, six decimals.
	Lon float64 `json:"lon"`
}

// WriteNDJSON writes items as newline-delimited JSON, one object per line, with a stable field order (that of the struct).
// HTML characters are not escaped. The output for given items is byte-for-byte stable.
func WriteNDJSON(w io.Writer, items []Item) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range items {
		if err := enc.Encode(&items[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

//go:embed mapping.json
var mappingJSON []byte

// Mapping returns the bleve index mapping JSON for the menu index, as bytes.
// It is the content of mapping.json in this package: a default mapping with
// explicit fields for every Item property (name and description analysed
// with "en", restaurant with "standard", cuisine, tags, city and ids as
// keywords, numeric and geopoint fields with doc values), BM25 scoring, and
// the composite _all field queried with the "en" analyzer. The returned
// slice is a copy and may be modified.
func Mapping() []byte {
	out := make([]byte, len(mappingJSON))
	copy(out, mappingJSON)
	return out
}
