package catalog

// city is a delivery area: a real city centre plus the box, in metres east
// (x) and north (y) of that centre, where its restaurants may be placed.
// The boxes keep restaurants out of the larger lakes, bays and seas next to
// some centres; everything is also clipped to a disc of radius maxR.
type city struct {
	name     string
	weight   int // relative number of restaurants
	lat, lon int // centre, in micro-degrees
	lonPerKm int // micro-degrees of longitude per km east at the centre: 1e6/(111.32*cos(lat))
	maxR     int // metres
	minX     int
	maxX     int
	minY     int
	maxY     int
}

// metresPerDegreeLat converts metres north into degrees of latitude.
const metresPerDegreeLat = 111320

var cities = []city{
	{name: "London", weight: 14, lat: 51507400, lon: -127800, lonPerKm: 14433, maxR: 14000, minX: -14000, maxX: 14000, minY: -14000, maxY: 14000},
	{name: "Paris", weight: 9, lat: 48856600, lon: 2352200, lonPerKm: 13653, maxR: 12000, minX: -12000, maxX: 12000, minY: -12000, maxY: 12000},
	{name: "Berlin", weight: 6, lat: 52520000, lon: 13405000, lonPerKm: 14763, maxR: 14000, minX: -14000, maxX: 14000, minY: -14000, maxY: 14000},
	{name: "Madrid", weight: 5, lat: 40416800, lon: -3703800, lonPerKm: 11799, maxR: 12000, minX: -12000, maxX: 12000, minY: -12000, maxY: 12000},
	{name: "Amsterdam", weight: 4, lat: 52367600, lon: 4904100, lonPerKm: 14712, maxR: 9000, minX: -9000, maxX: 6000, minY: -9000, maxY: 6000},
	{name: "Dublin", weight: 3, lat: 53349800, lon: -6260300, lonPerKm: 15049, maxR: 10000, minX: -10000, maxX: 3500, minY: -10000, maxY: 10000},
	{name: "New York", weight: 14, lat: 40712800, lon: -74006000, lonPerKm: 11851, maxR: 14000, minX: -3000, maxX: 14000, minY: -6000, maxY: 14000},
	{name: "San Francisco", weight: 6, lat: 37774900, lon: -122419400, lonPerKm: 11365, maxR: 7000, minX: -7000, maxX: 2000, minY: -7000, maxY: 3000},
	{name: "Los Angeles", weight: 9, lat: 34052200, lon: -118243700, lonPerKm: 10842, maxR: 14000, minX: -14000, maxX: 14000, minY: -14000, maxY: 14000},
	{name: "Chicago", weight: 7, lat: 41878100, lon: -87629800, lonPerKm: 12065, maxR: 14000, minX: -14000, maxX: 1000, minY: -14000, maxY: 14000},
	{name: "Toronto", weight: 7, lat: 43653200, lon: -79383200, lonPerKm: 12416, maxR: 14000, minX: -14000, maxX: 14000, minY: -500, maxY: 14000},
	{name: "Sydney", weight: 6, lat: -33868800, lon: 151209300, lonPerKm: 10819, maxR: 14000, minX: -14000, maxX: 6000, minY: -14000, maxY: 14000},
	{name: "Melbourne", weight: 5, lat: -37813600, lon: 144963100, lonPerKm: 11371, maxR: 14000, minX: -14000, maxX: 14000, minY: -3000, maxY: 14000},
	{name: "Singapore", weight: 5, lat: 1352100, lon: 103819800, lonPerKm: 8986, maxR: 9000, minX: -9000, maxX: 9000, minY: -6000, maxY: 9000},
	{name: "Tokyo", weight: 7, lat: 35676200, lon: 139650300, lonPerKm: 11059, maxR: 14000, minX: -14000, maxX: 9000, minY: -14000, maxY: 14000},
}
