package catalog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// goldenSHA256 is the sha256 of WriteNDJSON(Generate(DefaultSeed, 50)). If a
// deliberate change to the generator or its tables alters the output, update
// it together with testdata/golden_head.ndjson and regenerate
// examples/catalog/menu.ndjson (go run ./internal/catalog/gen -o examples/catalog/menu.ndjson).
const goldenSHA256 = "d092f9130518985993995a0b938d1e42918bf6b69a596b73b2cac9f822bf16ab"

// bundledMenu and bundledMapping are the committed demo files.
const (
	bundledMenu    = "../../examples/catalog/menu.ndjson"
	bundledMapping = "../../examples/catalog/mapping.json"
)

func ndjson(t *testing.T, items []Item) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteNDJSON(&buf, items); err != nil {
		t.Fatalf("WriteNDJSON: %v", err)
	}
	return buf.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// defaultItems caches Generate(DefaultSeed, DefaultSize) for the tests that
// only read it.
var defaultItems = sync.OnceValue(func() []Item { return Generate(DefaultSeed, DefaultSize) })

func TestTablesValid(t *testing.T) {
	if _, err := buildTables(); err != nil {
		t.Fatal(err)
	}
	if len(cuisines) < 12 {
		t.Errorf("%d cuisines, want at least 12", len(cuisines))
	}
	seen := map[string]bool{}
	for _, cu := range cuisines {
		if cu.name != strings.ToLower(cu.name) || seen[cu.name] {
			t.Errorf("cuisine %q: must be lowercase and unique", cu.name)
		}
		seen[cu.name] = true
		if len(cu.dishes) < 25 {
			t.Errorf("cuisine %q: %d dishes, want at least 25", cu.name, len(cu.dishes))
		}
		if len(cu.lead)*len(cu.tail) < 100 {
			t.Errorf("cuisine %q: only %d restaurant name combinations", cu.name, len(cu.lead)*len(cu.tail))
		}
		names := map[string]bool{}
		for _, d := range cu.dishes {
			if names[d.n] {
				t.Errorf("cuisine %q: duplicate dish %q", cu.name, d.n)
			}
			names[d.n] = true
			if d.p < 200 || d.p > 3500 {
				t.Errorf("dish %q: implausible price %d", d.n, d.p)
			}
		}
	}
	if len(cities) < 12 {
		t.Errorf("%d cities, want at least 12", len(cities))
	}
	// Anything named after a chilli must make the dish spicy.
	hot := regexp.MustCompile(`(?i)chilli|chile|jalapeno|chipotle|gochu|harissa|scotch bonnet|hot sauce|hot oil|spicy`)
	for name, ig := range ingredients {
		if hot.MatchString(name) && !strings.Contains(ig.f, "C") {
			t.Errorf("ingredient %q sounds spicy but has no C flag", name)
		}
	}
	for key, p := range proteins {
		if p.plant && p.f != "" {
			t.Errorf("protein %q: a plant protein cannot have diet flags %q", key, p.f)
		}
	}
}

func TestDeterministic(t *testing.T) {
	tests := []struct {
		seed uint64
		n    int
	}{
		{DefaultSeed, 0},
		{DefaultSeed, 1},
		{DefaultSeed, 7},
		{DefaultSeed, 50},
		{DefaultSeed, 1000},
		{1, 300},
		{42, 31},
		{math.MaxUint64, 200},
	}
	for _, tc := range tests {
		a, b := Generate(tc.seed, tc.n), Generate(tc.seed, tc.n)
		if len(a) != tc.n {
			t.Errorf("Generate(%d, %d): %d items", tc.seed, tc.n, len(a))
		}
		if a == nil {
			t.Errorf("Generate(%d, %d): nil slice", tc.seed, tc.n)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("Generate(%d, %d): two calls differ", tc.seed, tc.n)
		}
		if !bytes.Equal(ndjson(t, a), ndjson(t, b)) {
			t.Errorf("Generate(%d, %d): NDJSON differs", tc.seed, tc.n)
		}
	}
	if reflect.DeepEqual(Generate(1, 100), Generate(2, 100)) {
		t.Error("seeds 1 and 2 gave the same catalogue")
	}
	if got := Generate(DefaultSeed, -5); got == nil || len(got) != 0 {
		t.Errorf("Generate(seed, -5) = %v, want empty non-nil", got)
	}
}

func TestGolden(t *testing.T) {
	out := ndjson(t, Generate(DefaultSeed, 50))
	if got := sha(out); got != goldenSHA256 {
		t.Errorf("sha256 of Generate(DefaultSeed, 50) = %s, want %s", got, goldenSHA256)
	}
	want, err := os.ReadFile("testdata/golden_head.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(out, []byte("\n"))
	if got := bytes.Join(lines[:3], nil); !bytes.Equal(got, want) {
		t.Errorf("first 3 lines differ from testdata/golden_head.ndjson:\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestBundledFiles(t *testing.T) {
	data, err := os.ReadFile(bundledMenu)
	if err != nil {
		t.Fatalf("bundled demo file: %v", err)
	}
	want := ndjson(t, defaultItems())
	if got, w := sha(data), sha(want); got != w {
		t.Errorf("%s: sha256 %s, want %s (regenerate it with go run ./internal/catalog/gen -o examples/catalog/menu.ndjson)", bundledMenu, got, w)
	}
	if len(data) > 10<<20 {
		t.Errorf("%s is %d bytes, want under 10 MiB", bundledMenu, len(data))
	}
	m, err := os.ReadFile(bundledMapping)
	if err != nil {
		t.Fatalf("bundled mapping: %v", err)
	}
	if !bytes.Equal(m, Mapping()) {
		t.Errorf("%s differs from internal/catalog/mapping.json", bundledMapping)
	}
}

func TestWriteNDJSON(t *testing.T) {
	items := Generate(7, 40)
	out := ndjson(t, items)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	fieldOrder := regexp.MustCompile(`^\{"id":.*,"name":.*,"description":.*,"restaurant":.*,"restaurant_id":.*,"cuisine":.*,"tags":\[.*\],"price":.*,"rating":.*,"rating_count":.*,"open_hour":.*,"close_hour":.*,"city":.*,"location":\{"lat":.*,"lon":.*\}\}$`)
	for sc.Scan() {
		if !fieldOrder.Match(sc.Bytes()) {
			t.Errorf("line %d does not have the struct's field order: %s", n+1, sc.Bytes())
		}
		n++
	}
	if n != len(items) {
		t.Errorf("%d lines, want %d", n, len(items))
	}
	if m := Mapping(); len(m) == 0 || m[0] != '{' {
		t.Error("Mapping() is not a JSON object")
	}
}

func TestUniqueIDs(t *testing.T) {
	idRe := regexp.MustCompile(`^r\d{4,}-i\d{2}$`)
	ids := map[string]bool{}
	for _, it := range defaultItems() {
		if ids[it.ID] {
			t.Fatalf("duplicate id %q", it.ID)
		}
		ids[it.ID] = true
		if !idRe.MatchString(it.ID) || !strings.HasPrefix(it.ID, it.RestaurantID+"-") {
			t.Errorf("bad id %q for restaurant %q", it.ID, it.RestaurantID)
		}
	}
}

var tagOrder = []string{"spicy", "vegetarian", "vegan", "gluten-free", "dairy-free", "halal", "healthy", "kids", "popular", "new", "breakfast", "dessert", "drink"}

func has(tags []string, tag string) bool { return slices.Contains(tags, tag) }

func TestTagsConsistent(t *testing.T) {
	meat := regexp.MustCompile(`(?i)\b(chicken|beef|pork|lamb|bacon|ham|shrimp|prawns?|fish|salmon|tuna|duck|anchovies|squid|octopus|clams|mussels|eel|goat|oxtail|chorizo|salami|pepperoni|prosciutto|guanciale|brisket|steak|sausage)\b`)
	goatCheese := regexp.MustCompile(`(?i)goat cheese`)
	eggHoney := regexp.MustCompile(`(?i)\b(eggs?|honey|mayonnaise|cheddar|parmesan|mozzarella|feta|butter|cream)\b`)
	chilli := regexp.MustCompile(`(?i)chilli|jalapeno|scotch bonnet|gochujang`)
	pork := regexp.MustCompile(`(?i)\b(pork|bacon|ham|chorizo|pepperoni|prosciutto|guanciale|salami|beer|wine|soju)\b`)

	rules := []struct {
		name string
		bad  func(it Item) bool
	}{
		{"vegan implies vegetarian", func(it Item) bool { return has(it.Tags, "vegan") && !has(it.Tags, "vegetarian") }},
		{"vegan implies dairy-free", func(it Item) bool { return has(it.Tags, "vegan") && !has(it.Tags, "dairy-free") }},
		{"vegetarian has no meat or fish", func(it Item) bool {
			return has(it.Tags, "vegetarian") && meat.MatchString(goatCheese.ReplaceAllString(it.Name+" "+it.Description, "chevre"))
		}},
		{"vegan has no egg, honey or plain dairy", func(it Item) bool {
			if !has(it.Tags, "vegan") {
				return false
			}
			d := strings.ToLower(it.Name + " " + it.Description)
			for _, m := range eggHoney.FindAllStringIndex(d, -1) {
				before := d[:m[0]]
				if !strings.HasSuffix(before, "vegan ") && !strings.HasSuffix(before, "vegan sour ") && !strings.HasSuffix(before, "coconut ") && !strings.HasSuffix(before, "cashew ") && !strings.HasSuffix(before, "coconut ice ") {
					return true
				}
			}
			return false
		}},
		{"chilli in a dish means spicy", func(it Item) bool {
			return !has(it.Tags, "drink") && chilli.MatchString(it.Description) && !has(it.Tags, "spicy")
		}},
		{"spicy in the name means spicy", func(it Item) bool {
			return strings.Contains(it.Name, "Spicy") && !has(it.Tags, "spicy")
		}},
		{"spicy dishes say so", func(it Item) bool {
			return has(it.Tags, "spicy") && !strings.Contains(strings.ToLower(it.Name+" "+it.Description), "spicy")
		}},
		{"Vegan in the name means vegan", func(it Item) bool {
			return strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(it.Name, "Family-size "), "Spicy "), "Crispy "), "Vegan ") && !has(it.Tags, "vegan")
		}},
		{"Gluten-Free in the name means gluten-free", func(it Item) bool {
			return strings.Contains(it.Name, "Gluten-Free") && !has(it.Tags, "gluten-free")
		}},
		{"halal has no pork or alcohol", func(it Item) bool { return has(it.Tags, "halal") && pork.MatchString(it.Name+" "+it.Description) }},
		{"spicy food is not for kids", func(it Item) bool { return has(it.Tags, "spicy") && has(it.Tags, "kids") }},
		{"drinks carry no dietary tags", func(it Item) bool {
			return has(it.Tags, "drink") && slices.ContainsFunc(it.Tags, func(s string) bool {
				return !slices.Contains([]string{"drink", "popular", "new"}, s)
			})
		}},
		{"tags are known, ordered and unique", func(it Item) bool {
			last := -1
			for _, tg := range it.Tags {
				i := slices.Index(tagOrder, tg)
				if i <= last {
					return true
				}
				last = i
			}
			return it.Tags == nil
		}},
	}
	items := defaultItems()
	for _, rule := range rules {
		t.Run(rule.name, func(t *testing.T) {
			bad := 0
			for _, it := range items {
				if rule.bad(it) {
					bad++
					if bad <= 5 {
						t.Errorf("%s %q: %q %v", it.ID, it.Name, it.Description, it.Tags)
					}
				}
			}
			if bad > 5 {
				t.Errorf("... %d violations in all", bad)
			}
		})
	}

	// Every food item of a halal restaurant is halal, and no other is.
	halal := map[string][2]int{}
	for _, it := range items {
		if has(it.Tags, "drink") {
			continue
		}
		c := halal[it.RestaurantID]
		if has(it.Tags, "halal") {
			c[0]++
		} else {
			c[1]++
		}
		halal[it.RestaurantID] = c
	}
	for id, c := range halal {
		if c[0] > 0 && c[1] > 0 {
			t.Errorf("restaurant %s: %d halal and %d non-halal food items", id, c[0], c[1])
		}
	}
}

func TestFieldRanges(t *testing.T) {
	knownCuisine := map[string]bool{}
	for _, cu := range cuisines {
		knownCuisine[cu.name] = true
	}
	knownCity := map[string]bool{}
	for _, c := range cities {
		knownCity[c.name] = true
	}
	checks := []struct {
		name string
		ok   func(it Item) bool
	}{
		{"name", func(it Item) bool {
			return it.Name != "" && it.Name == strings.TrimSpace(it.Name) && !strings.Contains(it.Name, "  ") && !strings.Contains(it.Name, "{")
		}},
		{"description is 1-2 sentences", func(it Item) bool {
			d := it.Description
			return len(d) > 10 && strings.HasSuffix(d, ".") && strings.Count(d, ". ")+1 <= 2 && !strings.Contains(d, "{") && d[0] >= 'A' && d[0] <= 'Z'
		}},
		{"restaurant", func(it Item) bool {
			return it.Restaurant != "" && regexp.MustCompile(`^r\d{4,}$`).MatchString(it.RestaurantID)
		}},
		{"cuisine", func(it Item) bool { return knownCuisine[it.Cuisine] }},
		{"city", func(it Item) bool { return knownCity[it.City] }},
		{"price", func(it Item) bool {
			c := it.Price * 100
			return it.Price >= 0.99 && it.Price <= 100 && math.Abs(c-math.Round(c)) < 1e-6
		}},
		{"rating", func(it Item) bool {
			r := it.Rating * 10
			return it.Rating >= 1 && it.Rating <= 5 && math.Abs(r-math.Round(r)) < 1e-9
		}},
		{"rating_count", func(it Item) bool { return it.RatingCount >= 1 && it.RatingCount < 100000 }},
		{"hours", func(it Item) bool {
			return it.OpenHour >= 0 && it.OpenHour <= 23 && it.CloseHour >= 0 && it.CloseHour <= 23 && it.OpenHour != it.CloseHour
		}},
		{"breakfast only where open early", func(it Item) bool { return !has(it.Tags, "breakfast") || it.OpenHour <= 9 }},
	}
	items := defaultItems()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			bad := 0
			for _, it := range items {
				if !c.ok(it) {
					bad++
					if bad <= 5 {
						t.Errorf("%s: %+v", it.ID, it)
					}
				}
			}
		})
	}

	// Ratings are skewed towards 3.5-4.8.
	mid := 0
	for _, it := range items {
		if it.Rating >= 3.5 && it.Rating <= 4.8 {
			mid++
		}
	}
	if frac := float64(mid) / float64(len(items)); frac < 0.75 {
		t.Errorf("only %.0f%% of ratings in 3.5-4.8", frac*100)
	}
}

func TestRestaurants(t *testing.T) {
	type agg struct {
		first         Item
		n             int
		drinks, mains []float64
		names         map[string]bool
	}
	items := defaultItems()
	rs := map[string]*agg{}
	var order []string
	for _, it := range items {
		a := rs[it.RestaurantID]
		if a == nil {
			a = &agg{first: it, names: map[string]bool{}}
			rs[it.RestaurantID] = a
			order = append(order, it.RestaurantID)
		}
		a.n++
		f := a.first
		if it.Restaurant != f.Restaurant || it.Cuisine != f.Cuisine || it.City != f.City || it.Location != f.Location || it.OpenHour != f.OpenHour || it.CloseHour != f.CloseHour {
			t.Errorf("%s: restaurant fields differ from %s", it.ID, f.ID)
		}
		if a.names[it.Name] {
			t.Errorf("%s: %q appears twice on the menu", it.ID, it.Name)
		}
		a.names[it.Name] = true
		if has(it.Tags, "drink") {
			a.drinks = append(a.drinks, it.Price)
		} else if !has(it.Tags, "dessert") && it.Price >= 9 {
			a.mains = append(a.mains, it.Price)
		}
	}
	if n := len(rs); n < 900 || n > 1200 {
		t.Errorf("%d restaurants for %d items, want about 1,000", n, len(items))
	}
	names := map[string]string{}
	for _, id := range order {
		a := rs[id]
		if a.n < 8 || a.n > 30 {
			t.Errorf("restaurant %s has %d items, want 8-30", id, a.n)
		}
		if other, dup := names[a.first.Restaurant]; dup {
			t.Errorf("restaurants %s and %s are both called %q", other, id, a.first.Restaurant)
		}
		names[a.first.Restaurant] = id
		if len(a.drinks) == 0 || len(a.mains) == 0 {
			t.Errorf("restaurant %s: %d drinks and %d mains", id, len(a.drinks), len(a.mains))
			continue
		}
		if avg(a.drinks) >= avg(a.mains) {
			t.Errorf("restaurant %s: drinks average %.2f, mains %.2f", id, avg(a.drinks), avg(a.mains))
		}
	}
}

func avg(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// haversineKm is the great-circle distance in km.
func haversineKm(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Sqrt(a))
}

func TestLocations(t *testing.T) {
	centre := map[string]city{}
	for _, c := range cities {
		centre[c.name] = c
		// The hard-coded longitude scale matches the latitude.
		want := 1e6 / (111.32 * math.Cos(float64(c.lat)/1e6*math.Pi/180))
		if math.Abs(float64(c.lonPerKm)-want) > 1 {
			t.Errorf("%s: lonPerKm %d, want %.0f", c.name, c.lonPerKm, want)
		}
	}
	worst := 0.0
	for _, it := range defaultItems() {
		c := centre[it.City]
		d := haversineKm(float64(c.lat)/1e6, float64(c.lon)/1e6, it.Location.Lat, it.Location.Lon)
		worst = max(worst, d)
		if d > 20 {
			t.Errorf("%s: %.1f km from the centre of %s", it.ID, d, it.City)
		}
		if it.Location.Lat != math.Round(it.Location.Lat*1e6)/1e6 {
			t.Errorf("%s: latitude %v has more than six decimals", it.ID, it.Location.Lat)
		}
	}
	if worst > 15.1 {
		t.Errorf("farthest restaurant is %.2f km from its city centre, want within ~15 km", worst)
	}
}

func TestSearchableContent(t *testing.T) {
	// The demo queries need matching documents.
	items := defaultItems()
	tests := []struct {
		name  string
		match func(it Item) bool
		min   int
	}{
		{"spicy noodles", func(it Item) bool {
			return has(it.Tags, "spicy") && strings.Contains(strings.ToLower(it.Name+" "+it.Description), "noodle")
		}, 200},
		{"vegan burger", func(it Item) bool { return has(it.Tags, "vegan") && strings.Contains(it.Name, "Burger") }, 20},
		{"margherita pizza", func(it Item) bool { return strings.Contains(it.Name, "Margherita Pizza") }, 50},
		{"pad thai", func(it Item) bool { return strings.Contains(it.Name, "Pad Thai") }, 50},
		{"sushi", func(it Item) bool { return strings.Contains(strings.ToLower(it.Description), "sushi") }, 100},
		{"gluten free pasta", func(it Item) bool {
			return has(it.Tags, "gluten-free") && regexp.MustCompile(`spaghetti|penne|linguine|fettuccine|macaroni`).MatchString(it.Description)
		}, 20},
		{"breakfast", func(it Item) bool { return has(it.Tags, "breakfast") }, 100},
		{"halal", func(it Item) bool { return has(it.Tags, "halal") }, 500},
	}
	for _, tc := range tests {
		n := 0
		for _, it := range items {
			if tc.match(it) {
				n++
			}
		}
		if n < tc.min {
			t.Errorf("%s: %d matching items, want at least %d", tc.name, n, tc.min)
		}
	}
}
