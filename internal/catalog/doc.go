// Package catalog generates the synthetic food-delivery catalogue used by the
// Quarry search platform demo.
//
// The catalogue is a flat list of menu items (see [Item]), one document per
// item, spread over roughly one restaurant per twenty items. Every restaurant
// serves a single cuisine and sits in one of a fixed set of real cities; its
// dishes are drawn from hand-written per-cuisine lists of real dishes, with
// optional protein choices and modifiers ("Spicy", "Crispy", "Classic",
// "Vegan", "Gluten-Free", "Family-size"). Descriptions are composed from the
// dish's actual ingredients and the dietary tags are derived from those same
// ingredients, so a "vegan" item never lists egg and a dish with chilli is
// always tagged "spicy".
//
// [Generate] is fully deterministic: it draws every random number from a PCG
// source seeded with the caller's seed and uses integer arithmetic only, so a
// given (seed, n) produces byte-identical [WriteNDJSON] output on every
// platform. The bundled demo file examples/catalog/menu.ndjson was produced
// with [DefaultSeed] and [DefaultSize]; [Mapping] returns the bleve index
// mapping for it.
package catalog
