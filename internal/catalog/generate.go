package catalog

import (
	"fmt"
	"strings"
	"sync"
)

// course is the menu section a dish belongs to.
type course int

const (
	main course = iota
	starter
	side
	soup
	salad
	dessert
	drink
	breakfast
)

// group is the part of a restaurant's menu a course is sampled into.
type group int

const (
	gMain group = iota
	gSmall
	gDessert
	gDrink
	gBreakfast
	numGroups
)

func (c course) group() group {
	switch c {
	case starter, side, soup, salad:
		return gSmall
	case dessert:
		return gDessert
	case drink:
		return gDrink
	case breakfast:
		return gBreakfast
	}
	return gMain
}

// dish is one entry of a cuisine's dish list.
type dish struct {
	n    string // name; "{p}" is replaced by the protein label, otherwise the label is prefixed
	w    int    // how many times the dish is in the menu pool (0 means 1): signature dishes appear more often, with several proteins
	c    course // menu section
	p    int    // typical price, in cents
	s    string // cooking style that leads the description, e.g. "wok-tossed" (optional)
	i    string // ingredients separated by "|", main one first; "{p}" marks the protein
	conn string // word joining the first ingredient to the rest (default "with")
	fin  string // if set, joins the last ingredient instead of "and", e.g. "served with", "in a"
	pro  string // protein keys separated by spaces (see proteins); the first is the most common
	mod  string // allowed modifiers: S spicy, C crispy, K classic, F family-size, V vegan, G gluten-free
	tag  string // extra tags: h healthy, k kids
	note string // optional second sentence of the description
	desc string // fixed first sentence, replacing the composed one (no S, V or G modifiers allowed)
}

// cuisine is a cuisine's dish list plus what restaurants serving it look like.
type cuisine struct {
	name   string   // lowercase, as in Item.Cuisine
	weight int      // relative number of restaurants
	halal  int      // percentage of its restaurants that are halal
	spice  string   // ingredient added by the "Spicy" modifier
	lead   []string // restaurant names are lead + " " + tail
	tail   []string
	dishes []dish
}

// Dietary facts about an ingredient.
type diet uint16

const (
	fMeat    diet = 1 << iota // meat or poultry (any land animal)
	fPork                     // pork (also sets fMeat)
	fFish                     // fish or seafood
	fDairy                    // milk, butter, cheese, cream, yoghurt
	fEgg                      // egg
	fGluten                   // wheat, barley, rye
	fChilli                   // makes the dish spicy
	fAlcohol                  // wine, beer, spirits
	fHoney                    // honey (not vegan)
)

func parseDiet(s string) diet {
	var f diet
	for _, c := range s {
		switch c {
		case 'M':
			f |= fMeat
		case 'P':
			f |= fPork | fMeat
		case 'F':
			f |= fFish
		case 'D':
			f |= fDairy
		case 'E':
			f |= fEgg
		case 'G':
			f |= fGluten
		case 'C':
			f |= fChilli
		case 'A':
			f |= fAlcohol
		case 'H':
			f |= fHoney
		default:
			panic(fmt.Sprintf("catalog: unknown diet flag %q", c))
		}
	}
	return f
}

func (f diet) vegetarian() bool { return f&(fMeat|fFish) == 0 }
func (f diet) vegan() bool      { return f.vegetarian() && f&(fDairy|fEgg|fHoney) == 0 }

// ingredient is an entry of the ingredients table.
type ingredient struct {
	f string // diet flags: M meat, P pork, F fish/seafood, D dairy, E egg, G gluten, C chilli, A alcohol, H honey
	v string // vegan replacement: "" none possible, "-" simply leave it out
	g string // gluten-free replacement: "" none possible, "-" simply leave it out
}

// protein is a protein choice for dishes that take one.
type protein struct {
	label string // shown in the dish name, e.g. "Chicken"; "" for no protein
	ingr  string // used in the description, e.g. "chicken"
	f     string // diet flags, as for ingredient
	delta int    // price difference in cents
	plant bool   // a plant protein: dropped from the name of a "Vegan ..." dish
}

// prepared forms of the tables, built once.
type prepDish struct {
	*dish
	ingr []string
	pros []string
}

type prepCuisine struct {
	*cuisine
	groups [numGroups][]*prepDish // every dish, by group; drinks include genericDrinks
}

var (
	prepOnce     sync.Once
	prepCuisines []*prepCuisine
	prepErr      error
)

func prepare() {
	prepOnce.Do(func() {
		prepCuisines, prepErr = buildTables()
		if prepErr != nil {
			panic(prepErr)
		}
	})
}

func prepareDish(d *dish) (*prepDish, error) {
	pd := &prepDish{dish: d, ingr: strings.Split(d.i, "|")}
	if d.pro != "" {
		pd.pros = strings.Fields(d.pro)
	}
	hasP := false
	for _, in := range pd.ingr {
		if strings.Contains(in, "{p}") {
			hasP = true
			continue
		}
		ig, ok := ingredients[in]
		if !ok {
			return nil, fmt.Errorf("dish %q: unknown ingredient %q", d.n, in)
		}
		for _, sub := range []string{ig.v, ig.g} {
			if sub != "" && sub != "-" {
				if _, ok := ingredients[sub]; !ok {
					return nil, fmt.Errorf("ingredient %q: unknown replacement %q", in, sub)
				}
			}
		}
	}
	if hasP != (len(pd.pros) > 0) {
		return nil, fmt.Errorf("dish %q: {p} in ingredients must go with a protein list", d.n)
	}
	for _, k := range pd.pros {
		if _, ok := proteins[k]; !ok {
			return nil, fmt.Errorf("dish %q: unknown protein %q", d.n, k)
		}
	}
	if d.desc != "" && (strings.ContainsAny(d.mod, "SVG") || len(pd.pros) > 0) {
		return nil, fmt.Errorf("dish %q: a fixed description cannot take modifiers or proteins", d.n)
	}
	return pd, nil
}

func buildTables() ([]*prepCuisine, error) {
	var generic []*prepDish
	for i := range genericDrinks {
		pd, err := prepareDish(&genericDrinks[i])
		if err != nil {
			return nil, err
		}
		generic = append(generic, pd)
	}
	out := make([]*prepCuisine, 0, len(cuisines))
	for ci := range cuisines {
		cu := &cuisines[ci]
		if _, ok := ingredients[cu.spice]; !ok {
			return nil, fmt.Errorf("cuisine %q: unknown spice ingredient %q", cu.name, cu.spice)
		}
		pc := &prepCuisine{cuisine: cu}
		for di := range cu.dishes {
			pd, err := prepareDish(&cu.dishes[di])
			if err != nil {
				return nil, err
			}
			g := pd.c.group()
			pc.groups[g] = append(pc.groups[g], pd)
		}
		pc.groups[gDrink] = append(pc.groups[gDrink], generic...)
		out = append(out, pc)
	}
	return out, nil
}

// Generate returns n items, deterministic for a given seed: the same (seed, n) always yields the same items in the same order, on every platform.
//
// Items come restaurant by restaurant (8 to 30 items each, so about one
// restaurant per 20 items); when n is at least 8 every restaurant has at
// least 8 items. n <= 0 yields an empty, non-nil slice.
func Generate(seed uint64, n int) []Item {
	prepare()
	items := make([]Item, 0, max(n, 0))
	r := newRNG(seed)
	g := &generator{r: r, usedNames: make(map[string]bool)}
	for num := 1; len(items) < n; num++ {
		rem := n - len(items)
		k := rem
		if rem > 30 {
			k = r.between(8, min(30, rem-8))
		}
		rs := g.newRestaurant(num)
		items = append(items, g.menu(rs, k)...)
	}
	return items
}

type generator struct {
	r         *rng
	usedNames map[string]bool // restaurant names
}

type restaurant struct {
	id         string
	name       string
	cu         *prepCuisine
	city       *city
	lat, lon   int // micro-degrees
	open       int
	close      int
	halal      bool
	breakfast  bool // opens early enough to serve breakfast
	rating     int  // tenths
	pop        int  // scale of rating counts
	priceLevel int  // percent of the typical price
	priceStyle int  // how prices end: .49/.99, .00/.50, .45/.95
}

func (g *generator) newRestaurant(num int) *restaurant {
	r := g.r
	cw := make([]int, len(prepCuisines))
	for i, c := range prepCuisines {
		cw[i] = c.weight
	}
	cu := prepCuisines[r.weighted(cw)]
	tw := make([]int, len(cities))
	for i := range cities {
		tw[i] = cities[i].weight
	}
	ci := &cities[r.weighted(tw)]

	rs := &restaurant{
		id:   fmt.Sprintf("r%04d", num),
		cu:   cu,
		city: ci,
	}
	rs.halal = r.chance(cu.halal)
	rs.name = g.restaurantName(cu, ci, num)

	// Opening hours.
	canBreakfast := len(cu.groups[gBreakfast]) > 0
	profile := r.weighted([]int{30, 35, 20, 15})
	if profile == 0 && !canBreakfast {
		profile = 1
	}
	switch profile {
	case 0: // breakfast and lunch, some stay open for dinner
		rs.open = pick(r, []int{7, 7, 8, 8, 9})
		rs.close = pick(r, []int{15, 16, 17, 21, 22, 23})
		rs.breakfast = true
	case 1: // lunch and dinner
		rs.open = pick(r, []int{11, 11, 12})
		rs.close = pick(r, []int{21, 22, 22, 23, 23})
	case 2: // dinner only
		rs.open = pick(r, []int{16, 17, 17, 18})
		rs.close = pick(r, []int{22, 23, 23, 0})
	default: // late night
		rs.open = pick(r, []int{11, 12, 17, 18})
		rs.close = pick(r, []int{0, 1, 2, 2, 3})
	}

	// Location: most restaurants are central, a few are in the suburbs.
	radius := []int{4000, 9000, 14000}[r.weighted([]int{50, 35, 15})]
	radius = min(radius, ci.maxR)
	for {
		x := r.between(-radius, radius)
		y := r.between(-radius, radius)
		if x*x+y*y > radius*radius || x < ci.minX || x > ci.maxX || y < ci.minY || y > ci.maxY {
			continue
		}
		// int64: y*1e6 overflows a 32-bit int.
		rs.lat = ci.lat + int(int64(y)*1_000_000/metresPerDegreeLat)
		rs.lon = ci.lon + int(int64(x)*int64(ci.lonPerKm)/1000)
		break
	}

	// Quality and popularity: most places rate 3.6-4.8, a few are poor.
	switch q := r.intn(100); {
	case q < 5:
		rs.rating = r.between(22, 32)
	case q < 20:
		rs.rating = r.between(33, 38)
	default:
		rs.rating = 36 + r.intn(6) + r.intn(6)
	}
	rs.pop = r.between(20, 400) * r.between(1, 6)
	rs.priceLevel = r.between(85, 130)
	rs.priceStyle = r.intn(3)
	return rs
}

func (g *generator) restaurantName(cu *prepCuisine, ci *city, num int) string {
	r := g.r
	for range 40 {
		lead, tail := pick(r, cu.lead), pick(r, cu.tail)
		if strings.Contains(lead, tail) || strings.Contains(tail, lead) {
			continue
		}
		name := lead + " " + tail
		if !g.usedNames[name] {
			g.usedNames[name] = true
			return name
		}
	}
	// Pools exhausted: fall back to a branch name.
	name := pick(r, cu.lead) + " " + pick(r, cu.tail) + " " + ci.name
	if g.usedNames[name] {
		name = fmt.Sprintf("%s %d", name, num)
	}
	g.usedNames[name] = true
	return name
}

// menu returns k items for restaurant rs.
func (g *generator) menu(rs *restaurant, k int) []Item {
	r := g.r
	pools := g.pools(rs)

	// How many items of each group.
	var want [numGroups]int
	want[gDrink] = 1 + k/12
	want[gDessert] = 1 + k/15
	want[gSmall] = k * 3 / 10
	if rs.breakfast && len(pools[gBreakfast]) > 0 {
		want[gBreakfast] = min(2+k/10, len(pools[gBreakfast]))
	}
	if k < 8 {
		want = [numGroups]int{}
		if k >= 3 {
			want[gDrink] = 1
			want[gSmall] = 1
		}
	}
	used := want[gDrink] + want[gDessert] + want[gSmall] + want[gBreakfast]
	want[gMain] = k - used

	// Visit each pool in a random order, wrapping around when a pool is
	// used up (dishes with a protein choice then come back with another
	// protein).
	var order [numGroups][]int
	var next [numGroups]int
	for gi := range numGroups {
		order[gi] = r.perm(len(pools[gi]))
	}
	names := make(map[string]bool, k)
	items := make([]Item, 0, k)
	plan := make([]group, 0, k)
	// Menus read main courses first: breakfast, starters and sides, mains,
	// desserts, drinks.
	for _, gi := range []group{gBreakfast, gSmall, gMain, gDessert, gDrink} {
		for range want[gi] {
			plan = append(plan, gi)
		}
	}
	for _, gi := range plan {
		var it Item
		ok := false
		for _, try := range []group{gi, gMain, gSmall, gDessert, gDrink} {
			if len(pools[try]) == 0 {
				continue
			}
			for range 2*len(pools[try]) + 4 {
				pd := pools[try][order[try][next[try]%len(order[try])]]
				next[try]++
				it = g.item(rs, pd)
				if !names[it.Name] {
					ok = true
					break
				}
			}
			if ok {
				break
			}
		}
		if !ok {
			// Should not happen with the bundled tables: every cuisine has
			// more distinct dishes than the largest menu needs.
			panic(fmt.Sprintf("catalog: cannot fill menu of %s (%s)", rs.name, rs.cu.name))
		}
		names[it.Name] = true
		it.ID = fmt.Sprintf("%s-i%02d", rs.id, len(items)+1)
		items = append(items, it)
	}
	return items
}

// pools returns the dishes restaurant rs may serve, by group.
func (g *generator) pools(rs *restaurant) [numGroups][]*prepDish {
	var out [numGroups][]*prepDish
	for gi := range numGroups {
		for _, pd := range rs.cu.groups[gi] {
			if rs.halal && !halalOK(pd) {
				continue
			}
			for range max(pd.w, 1) {
				out[gi] = append(out[gi], pd)
			}
		}
	}
	return out
}

// halalOK reports whether a halal restaurant can serve pd (with at least one
// of its proteins).
func halalOK(pd *prepDish) bool {
	for _, in := range pd.ingr {
		if strings.Contains(in, "{p}") {
			continue
		}
		if parseDiet(ingredients[in].f)&(fPork|fAlcohol) != 0 {
			return false
		}
	}
	if len(pd.pros) == 0 {
		return true
	}
	for _, k := range pd.pros {
		if parseDiet(proteins[k].f)&(fPork|fAlcohol) == 0 {
			return true
		}
	}
	return false
}

// perm returns a random permutation of [0, n).
func (r *rng) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// part is one ingredient of a concrete item.
type part struct {
	text string
	f    diet
	last bool // the dish's last ingredient, which dish.fin introduces
}

// item builds one concrete menu item from dish pd for restaurant rs. The ID
// is filled in by the caller.
func (g *generator) item(rs *restaurant, pd *prepDish) Item {
	r := g.r

	// Protein.
	var pr protein
	hasPro := len(pd.pros) > 0
	if hasPro {
		cands := pd.pros
		if rs.halal {
			cands = nil
			for _, k := range pd.pros {
				if parseDiet(proteins[k].f)&(fPork|fAlcohol) == 0 {
					cands = append(cands, k)
				}
			}
		}
		key := cands[0]
		if len(cands) > 1 && !r.chance(40) {
			key = pick(r, cands)
		}
		pr = proteins[key]
	}

	// Ingredients.
	parts := make([]part, 0, len(pd.ingr)+1)
	for i, in := range pd.ingr {
		last := i == len(pd.ingr)-1
		if strings.Contains(in, "{p}") {
			if pr.ingr == "" {
				continue
			}
			parts = append(parts, part{strings.ReplaceAll(in, "{p}", pr.ingr), parseDiet(pr.f), last})
			continue
		}
		parts = append(parts, part{in, parseDiet(ingredients[in].f), last})
	}

	// Base name.
	name := pd.n
	if strings.Contains(name, "{p}") {
		name = strings.TrimSpace(strings.ReplaceAll(name, "{p}", pr.label))
	} else if pr.label != "" {
		name = pr.label + " " + name
	}

	// Dietary variant.
	var vegan, glutenFree bool
	if strings.Contains(pd.mod, "V") && !all(parts).vegan() && (!hasPro || pr.plant) {
		pct := 12
		if hasPro {
			pct = 35
			if pr.label == "Plant-Based" {
				pct = 85
			}
		}
		if r.chance(pct) {
			if np, ok := substitute(parts, func(ig ingredient) string { return ig.v }, func(f diet) bool { return !f.vegan() }); ok {
				parts, vegan = np, true
				if hasPro && pr.plant && !strings.Contains(pd.n, "{p}") {
					name = pd.n // "Vegan Pad Thai", not "Vegan Tofu Pad Thai"
				}
				name = "Vegan " + name
			}
		}
	}
	if !vegan && strings.Contains(pd.mod, "G") && all(parts)&fGluten != 0 && r.chance(15) {
		if np, ok := substitute(parts, func(ig ingredient) string { return ig.g }, func(f diet) bool { return f&fGluten != 0 }); ok {
			parts, glutenFree = np, true
			name = "Gluten-Free " + name
		}
	}

	// Style modifier.
	var crispy bool
	switch {
	case strings.Contains(pd.mod, "S") && all(parts)&fChilli == 0 && r.chance(15):
		sp := part{text: rs.cu.spice, f: parseDiet(ingredients[rs.cu.spice].f)}
		at := len(parts)
		if at > 1 && parts[at-1].last {
			at--
		}
		parts = append(parts[:at], append([]part{sp}, parts[at:]...)...)
		name = "Spicy " + name
	case strings.Contains(pd.mod, "C") && r.chance(30):
		crispy = true
		name = "Crispy " + name
	case strings.Contains(pd.mod, "K") && !vegan && !glutenFree && r.chance(20):
		name = "Classic " + name
	}
	family := strings.Contains(pd.mod, "F") && pd.c == main && r.chance(7)
	if family {
		name = "Family-size " + name
	}

	f := all(parts)
	isFood := pd.c != drink
	spicy := isFood && f&fChilli != 0

	// Description.
	desc := pd.desc
	if desc == "" {
		desc = compose(pd, parts)
	}
	var second string
	switch {
	case family && spicy && !strings.Contains(name, "Spicy"):
		second = pick(r, familySpicyLines)
	case family:
		second = pick(r, familyLines)
	case spicy && !strings.Contains(strings.ToLower(name+" "+desc), "spicy"):
		second = pick(r, spicyLines)
	case crispy && r.chance(50):
		second = "Fried until golden and crispy."
	case vegan:
		second = pick(r, veganLines)
	case glutenFree && hasPasta(parts):
		second = "Made with gluten-free pasta."
	case glutenFree:
		second = pick(r, glutenFreeLines)
	case pd.note != "" && !(spicy && strings.Contains(strings.ToLower(pd.note), "mild")) && r.chance(70):
		second = pd.note
	case isFood && r.chance(50):
		second = pick(r, genericLines[pd.c.group()])
	}
	if second != "" {
		desc += " " + second
	}

	// Tags, in canonical order.
	tags := make([]string, 0, 6)
	popular := r.chance(15)
	isNew := !popular && r.chance(6)
	if isFood {
		if spicy {
			tags = append(tags, "spicy")
		}
		if f.vegetarian() {
			tags = append(tags, "vegetarian")
		}
		if f.vegan() {
			tags = append(tags, "vegan")
		}
		if f&fGluten == 0 {
			tags = append(tags, "gluten-free")
		}
		if f&fDairy == 0 {
			tags = append(tags, "dairy-free")
		}
		if rs.halal && f&(fPork|fAlcohol) == 0 {
			tags = append(tags, "halal")
		}
		if strings.Contains(pd.tag, "h") && !crispy {
			tags = append(tags, "healthy")
		}
		if strings.Contains(pd.tag, "k") && !spicy {
			tags = append(tags, "kids")
		}
	}
	if popular {
		tags = append(tags, "popular")
	}
	if isNew {
		tags = append(tags, "new")
	}
	switch pd.c {
	case breakfast:
		tags = append(tags, "breakfast")
	case dessert:
		tags = append(tags, "dessert")
	case drink:
		tags = append(tags, "drink")
	}

	// Price.
	cents := (pd.p + pr.delta) * rs.priceLevel / 100
	if !isFood {
		cents = pd.p * (100 + (rs.priceLevel-100)/2) / 100
	}
	if family {
		cents = cents * 24 / 10
	}
	cents = (cents + 25) / 50 * 50 // nearest 50 cents
	switch rs.priceStyle {
	case 0:
		cents--
	case 2:
		cents -= 5
	}
	cents = max(cents, 99)

	// Rating.
	rating := rs.rating + r.between(-3, 2)
	count := rs.pop*r.between(5, 60)/100 + 1
	switch {
	case popular:
		rating++
		count = rs.pop*r.between(60, 150)/100 + 20
	case isNew:
		rating += r.between(-4, 2)
		count = r.between(1, 30)
	}
	rating = min(max(rating, 10), 50)

	return Item{
		Name:         name,
		Description:  desc,
		Restaurant:   rs.name,
		RestaurantID: rs.id,
		Cuisine:      rs.cu.name,
		Tags:         tags,
		Price:        float64(cents) / 100,
		Rating:       float64(rating) / 10,
		RatingCount:  count,
		OpenHour:     rs.open,
		CloseHour:    rs.close,
		City:         rs.city.name,
		Location:     GeoPoint{Lat: float64(rs.lat) / 1e6, Lon: float64(rs.lon) / 1e6},
	}
}

// all returns the union of the parts' diet flags.
func all(parts []part) diet {
	var f diet
	for _, p := range parts {
		f |= p.f
	}
	return f
}

// substitute replaces every part for which bad reports true by the
// replacement sub gives for its ingredient ("-" drops it). It fails if any
// such part has no replacement (a protein, or "" in the table).
func substitute(parts []part, sub func(ingredient) string, bad func(diet) bool) ([]part, bool) {
	out := make([]part, 0, len(parts))
	for _, p := range parts {
		if !bad(p.f) {
			out = append(out, p)
			continue
		}
		ig, ok := ingredients[p.text]
		if !ok {
			return nil, false // a protein
		}
		repl := sub(ig)
		switch repl {
		case "":
			return nil, false
		case "-":
			continue
		}
		out = append(out, part{repl, parseDiet(ingredients[repl].f), p.last})
	}
	if len(out) == 0 {
		return nil, false
	}
	return out, true
}

// compose builds the first sentence of a description from the dish's style
// and its ingredients.
func compose(pd *prepDish, parts []part) string {
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.text
	}
	var b strings.Builder
	if pd.s != "" {
		b.WriteString(pd.s)
		b.WriteByte(' ')
	}
	b.WriteString(texts[0])
	rest := texts[1:]
	var last string
	if pd.fin != "" && len(rest) > 0 && parts[len(parts)-1].last {
		last, rest = rest[len(rest)-1], rest[:len(rest)-1]
	}
	if len(rest) > 0 {
		conn := pd.conn
		if conn == "" {
			conn = "with"
		}
		b.WriteString(" " + conn + " ")
		b.WriteString(joinAnd(rest))
	}
	if last != "" {
		if strings.HasPrefix(pd.fin, "served") {
			b.WriteString(", ")
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(pd.fin + " " + last)
	}
	b.WriteByte('.')
	s := b.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

// hasPasta reports whether any part is a kind of pasta.
func hasPasta(parts []part) bool {
	for _, p := range parts {
		for _, kind := range []string{"spaghetti", "penne", "linguine", "fettuccine", "macaroni", "pasta"} {
			if strings.HasSuffix(p.text, kind) {
				return true
			}
		}
	}
	return false
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

var (
	familyLines      = []string{"Serves 3-4.", "A generous sharing portion for 3-4 people."}
	familySpicyLines = []string{"A spicy sharing portion for 3-4 people.", "Serves 3-4, and properly spicy."}
	spicyLines       = []string{"Spicy, bold and full of flavour.", "Properly spicy, with a real chilli kick.", "A spicy favourite.", "Pleasantly spicy and deeply savoury."}
	veganLines       = []string{"Completely plant-based.", "100% plant-based and vegan."}
	glutenFreeLines  = []string{"Made with gluten-free ingredients.", "A gluten-free take on the classic."}
	genericLines     = [numGroups][]string{
		gMain:      {"A house favourite.", "Hearty, fragrant and full of flavour.", "Cooked fresh to order.", "Generously portioned and deeply savoury.", "Comforting and aromatic.", "One of our most-loved dishes."},
		gSmall:     {"Perfect for sharing.", "A great start to any meal.", "Made fresh daily."},
		gDessert:   {"Sweet, indulgent and made in house.", "The perfect way to finish.", "Made in house every day."},
		gBreakfast: {"Served until 11am.", "A hearty way to start the day."},
	}
)
