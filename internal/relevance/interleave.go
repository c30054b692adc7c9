package relevance

import (
	"math"
	"math/rand/v2"
)

// Team is the side that placed a document in an interleaved ranking.
type Team uint8

// The two sides of an interleaving.
const (
	TeamNone      Team = 0
	TeamLive      Team = 1
	TeamCandidate Team = 2
)

// TeamDraft interleaves two rankings of the same candidates (indexes into
// them, best first) by team-draft interleaving (Radlinski, Kurup and
// Joachims, 2008): like two captains picking players, the side with
// fewer picks so far (a coin decides between equals) adds its best
// candidate not yet placed, and is credited with it. It returns the
// interleaved order and, for each position, the side that placed it. The
// coin is seeded by seed, so the same query gets the same interleaving.
// Candidates only one side ranks are placed by that side.
func TeamDraft(live, cand []int, seed uint64) (order []int, teams []Team) {
	rng := rand.New(rand.NewPCG(seed, 0x7ea3d4af))
	placed := make(map[int]bool, len(live)+len(cand))
	var nLive, nCand, i, j int
	next := func(r []int, k *int) (int, bool) {
		for *k < len(r) {
			c := r[*k]
			*k++
			if !placed[c] {
				return c, true
			}
		}
		return 0, false
	}
	for {
		liveTurn := nLive < nCand || (nLive == nCand && rng.Uint64()&1 == 0)
		c, ok := 0, false
		if liveTurn {
			if c, ok = next(live, &i); ok {
				nLive++
				teams = append(teams, TeamLive)
			} else if c, ok = next(cand, &j); ok { // live has none left
				nCand++
				teams = append(teams, TeamCandidate)
			}
		} else {
			if c, ok = next(cand, &j); ok {
				nCand++
				teams = append(teams, TeamCandidate)
			} else if c, ok = next(live, &i); ok {
				nLive++
				teams = append(teams, TeamLive)
			}
		}
		if !ok {
			return order, teams
		}
		placed[c] = true
		order = append(order, c)
	}
}

// Sequential is Wald's sequential probability ratio test on the outcomes
// of interleaved queries: of the queries whose clicks favour one side,
// the share p the candidate wins. It weighs H+ "p = 0.5 + Delta" (the
// candidate is better) against H- "p = 0.5 - Delta" (worse) after every
// decided query, and stops at the first boundary: with wins W and losses
// L, the log likelihood ratio is (W - L) ln((0.5+Delta)/(0.5-Delta)); it
// decides "better" at ln((1-Beta)/Alpha) and "worse" at
// ln(Beta/(1-Alpha)). Wald's bounds keep the chance of deciding "better"
// when the candidate is worse by Delta (or more) under about Alpha, and of
// deciding "worse" when it is better by Delta under about Beta. Ties
// (equal clicks) carry no information and are not counted. Past
// MaxQueries decided queries with no boundary reached, the test stops at
// "no difference shown".
type Sequential struct {
	Delta, Alpha, Beta float64
	MaxQueries         int
}

// Defaults of Sequential.
const (
	DefaultDelta      = 0.1
	DefaultAlpha      = 0.05
	DefaultBeta       = 0.05
	DefaultMaxQueries = 2000
)

// Verdicts of a sequential test.
const (
	Undecided    = 0
	Better       = 1
	Worse        = -1
	NoDifference = 2
)

// WithDefaults fills in zero fields.
func (s Sequential) WithDefaults() Sequential {
	if s.Delta == 0 {
		s.Delta = DefaultDelta
	}
	if s.Alpha == 0 {
		s.Alpha = DefaultAlpha
	}
	if s.Beta == 0 {
		s.Beta = DefaultBeta
	}
	if s.MaxQueries == 0 {
		s.MaxQueries = DefaultMaxQueries
	}
	return s
}

// Valid says what is wrong with the test's settings, or "".
func (s Sequential) Valid() string {
	switch {
	case s.Delta <= 0 || s.Delta >= 0.5:
		return "delta must be between 0 and 0.5"
	case s.Alpha <= 0 || s.Alpha >= 0.5 || s.Beta <= 0 || s.Beta >= 0.5:
		return "alpha and beta must be between 0 and 0.5"
	case s.MaxQueries < 1 || s.MaxQueries > 1_000_000:
		return "max_queries must be between 1 and 1000000"
	}
	return ""
}

// Bounds are the test's boundaries on the log likelihood ratio: "better"
// at upper or above, "worse" at lower or below.
func (s Sequential) Bounds() (upper, lower float64) {
	return math.Log((1 - s.Beta) / s.Alpha), math.Log(s.Beta / (1 - s.Alpha))
}

// LLR is the log likelihood ratio of H+ over H- after wins and losses.
func (s Sequential) LLR(wins, losses int) float64 {
	return float64(wins-losses) * math.Log((0.5+s.Delta)/(0.5-s.Delta))
}

// Decide returns the verdict after wins and losses.
func (s Sequential) Decide(wins, losses int) int {
	llr := s.LLR(wins, losses)
	upper, lower := s.Bounds()
	switch {
	case llr >= upper:
		return Better
	case llr <= lower:
		return Worse
	case wins+losses >= s.MaxQueries:
		return NoDifference
	}
	return Undecided
}
