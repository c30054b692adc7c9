package catalog

import (
	"fmt"
	"strings"
)

// proteins are the protein choices of dishes that take one (dish.pro).
var proteins = map[string]protein{
	"none":            {},
	"chicken":         {label: "Chicken", ingr: "chicken", f: "M"},
	"beef":            {label: "Beef", ingr: "beef", f: "M", delta: 200},
	"pork":            {label: "Pork", ingr: "pork", f: "P", delta: 50},
	"lamb":            {label: "Lamb", ingr: "lamb", f: "M", delta: 300},
	"duck":            {label: "Duck", ingr: "roast duck", f: "M", delta: 350},
	"goat":            {label: "Goat", ingr: "goat", f: "M", delta: 300},
	"shrimp":          {label: "Shrimp", ingr: "shrimp", f: "F", delta: 250},
	"prawn":           {label: "King Prawn", ingr: "king prawns", f: "F", delta: 350},
	"salmon":          {label: "Salmon", ingr: "salmon", f: "F", delta: 350},
	"tuna":            {label: "Tuna", ingr: "tuna", f: "F", delta: 350},
	"fish":            {label: "Fish", ingr: "white fish", f: "F", delta: 100},
	"tofu":            {label: "Tofu", ingr: "tofu", delta: -100, plant: true},
	"veg":             {label: "Vegetable", ingr: "seasonal vegetables", delta: -150, plant: true},
	"mushroom":        {label: "Mushroom", ingr: "mushrooms", delta: -100, plant: true},
	"falafel":         {label: "Falafel", ingr: "falafel", delta: -100, plant: true},
	"aloo":            {label: "Aloo", ingr: "potatoes", delta: -200, plant: true},
	"plant_patty":     {label: "Plant-Based", ingr: "flame-grilled plant-based patty", delta: 100, plant: true},
	"paneer":          {label: "Paneer", ingr: "paneer", f: "D"},
	"halloumi":        {label: "Halloumi", ingr: "halloumi", f: "D", delta: 50},
	"mozzarella":      {label: "Cheesy", ingr: "mozzarella", f: "D", delta: 100},
	"cheese_jalapeno": {label: "Cheese and Jalapeno", ingr: "cheese and jalapeno", f: "DC", delta: -100},
	"chashu":          {label: "Chashu", ingr: "chashu pork", f: "P", delta: 100},
	"char_siu":        {label: "Char Siu", ingr: "char siu pork", f: "P", delta: 50},
	"lemongrass_pork": {label: "Lemongrass Pork", ingr: "lemongrass pork", f: "P", delta: 50},
	"asada":           {label: "Carne Asada", ingr: "grilled steak", f: "M", delta: 200},
	"carnitas":        {label: "Carnitas", ingr: "pork carnitas", f: "P", delta: 50},
	"pastor":          {label: "Al Pastor", ingr: "al pastor pork", f: "P", delta: 50},
	"tuna_mayo":       {label: "Tuna Mayo", ingr: "tuna mayo", f: "FE"},
	"beef_patty":      {label: "Beef", ingr: "flame-grilled beef patty", f: "M"},
	"fried_chicken":   {label: "Chicken", ingr: "buttermilk fried chicken", f: "MGD"},
}

// ingredients holds the dietary facts of every ingredient a dish may list,
// parsed from ingredientTable.
var ingredients = parseIngredients(ingredientTable)

// ingredientTable has one ingredient per line: name | flags | vegan
// replacement | gluten-free replacement. Flags: M meat, P pork, F fish or
// seafood, D dairy, E egg, G gluten, C chilli (spicy), A alcohol, H honey.
// A replacement of "-" means the ingredient is simply left out; an empty one
// means the dish cannot be made that way. Ingredients with no flags are
// vegan, gluten-free and not spicy.
const ingredientTable = `
achiote
ackee
aioli                       | E   | vegan aioli
akkawi cheese               | D
Aleppo pepper               | C
al pastor pork              | P
allspice
almond cake                 | E
almond macarons             | ED
almonds
American cheese             | D   | vegan cheese
anchovies                   | F
anchovy broth               | F
apple pie                   | GD
arborio rice
artichokes
Asian pear
aubergine
avocado
bacon                       | P
baguette                    | G
baked beans
bamboo shoots
banana
banana milk                 | D
bara flatbread              | G
barbecued pork              | P
basil pesto                 | D   | vegan basil pesto
basmati rice
batter                      | G
battered cauliflower        | G
battered chicken            | MGE
battered onion rings        | G
battered white fish         | FG
BBQ sauce
bean sprouts
bechamel                    | DG
beef                        | M
beef and pork meatballs     | PGE
beef bone broth             | M
beef brisket                | M
beef broth                  | M
beef cubes                  | M
beef frankfurter            | M
beef patty                  | M
beef ragu                   | M
beef shank                  | M
beef short ribs             | M
beef stock                  | M
beef strips                 | M
beer                        | GA
berry compote
bird's eye chilli           | C
biscuit base                | GD
black bean sauce            | G
black beans
black lentils
black pepper
black tea
black vinegar               | G
black vinegar dip           | G
blue cheese                 | D
blue cheese dip             | DE
boiled egg                  | E
bonito flakes               | F
braised beef                | M
breadcrumbs                 | G   |             | gluten-free breadcrumbs
breaded chicken breast      | MGE
brioche bun                 | GED | vegan bun   | gluten-free bun
broccoli
broken rice
brown butter                | D
brown stew sauce
brown sugar
bucatini                    | G
buckwheat galette
buckwheat noodles           | G
buffalo hot sauce           | CD
buffalo mozzarella          | D
bulgur wheat                | G
bulgur wheat shells         | G
buns                        | G
burger sauce                | E   | vegan burger sauce
butter                      | D   | vegan butter
butter beans
butter croissant            | GDE
buttermilk fried chicken    | MGD
buttermilk pancakes         | GDE
cabbage
cabbage slaw
Caesar dressing             | FED
callaloo greens
cannellini beans
capers
caramel                     | D
caramel fish sauce          | F
caramelised apples          | D
caramelised onions
caramelised sugar
cardamom
Caribbean curry sauce       | C
carrot
carrots
cashew cream
cashew nuts
catfish                     | F
cauliflower
celery
char siu pork               | P
chashu pork                 | P
cheddar                     | D   | vegan cheddar
cheese                      | D   | vegan cheese
cheese and jalapeno         | DC
cheese sauce                | D
cheesecake                  | DE
cherry tomatoes
chicken                     | M
chicken broth               | M   | vegetable broth
chicken liver pate          | MD
chicken on the bone         | M
chicken skewers             | M
chicken tenders             | MGE
chicken thigh               | M
chicken tikka               | MD
chicken wings               | M
chickpeas
chilled beef broth          | M
chilli bean paste           | CG
chilli flakes               | C
chilli lime dressing        | CF
chilli oil                  | C
chilli powder               | C
Chinese broccoli
chipotle                    | C
chipotle mayo               | CE
chives
chocolate brownie           | GED
chocolate chips             | D
chocolate croissant         | GDE
chocolate dipping sauce     | D
chocolate ice cream         | D
chorizo                     | P
churros                     | G
ciabatta                    | G   |             | gluten-free bread
cilantro lime rice
cinnamon
cinnamon sugar
clams                       | F
cocoa
coconut
coconut chutney
coconut cream
coconut crust               | G
coconut curry sauce
coconut ice cream
coconut milk
coconut milk broth
coconut water
cod roe dip                 | FG
coffee
cola
coleslaw                    | E
condensed milk              | D
confit duck leg             | M
consome                     | M
cooked prawn                | F
coriander
corn husks
corn on the cob
corn salsa
corn tortillas
cornbread                   | GDE
cornichons
cornmeal dumplings          | G
cotija cheese               | D
country bread               | G
courgette
crab stick                  | FGE
crackers                    | G
cream                       | D   | coconut cream
crema                       | D
creme fraiche               | D
crepe                       | GDE
crispy noodles              | GE
crispy onions
crispy pitta                | G
crispy tortilla bowl
croquettes                  | GDE
croutons                    | G
crushed ice
crushed peanuts
Cuban bread                 | G
cucumber
cucumber relish
cumin
curried chickpeas
curry coconut broth         | C
curry leaves
curry powder
curry sauce
daikon
dark chocolate mousse       | DE
dark soy sauce              | G
dashi broth                 | F
diet cola
dill
ditalini pasta              | G
Dover sole                  | F
dried chillies              | C
drip coffee
duck confit                 | M
dumplings                   | G
edamame beans
egg                         | E   | -
egg batter                  | EG
egg custard                 | ED
egg noodles                 | GE
egg yolk                    | E
eggs                        | E
English muffin              | G
espresso
espresso-soaked ladyfingers | GE
evaporated milk             | D
falafel
fattoush                    | G
fava beans
fava puree
fenugreek
feta                        | D   | vegan feta
fettuccine                  | GE  |             | gluten-free fettuccine
filo pastry                 | G
fior di latte mozzarella    | D   | vegan mozzarella
fish cakes                  | F
fish roe                    | F
fish sauce                  | F   | soy sauce
flaky pastry                | GD
flatbread                   | G
flour tortilla              | G
flour tortillas             | G
fontina                     | D
fresh basil
fresh berries
fresh chilli                | C
fresh mango
fresh pasta sheets          | GE
fresh salmon                | F
fresh tuna                  | F
fried aubergine             | G
double-fried chicken        | MG
fried dumplings             | G
fried egg                   | E   | -
fried eggs                  | E
fried onions
fried shallots
fried tofu
fries
fruit
fruit soda
galangal
garam masala
garlic
garlic butter               | D
garlic potatoes
garlic sauce
gelato                      | D
ghee                        | D   | vegetable oil
giant beans
ginger
ginger beer
glass noodles
glutinous rice balls
glutinous rice cakes
gluten-free bread
gluten-free breadcrumbs
gluten-free bun
gluten-free fettuccine
gluten-free linguine
gluten-free macaroni
gluten-free penne
gluten-free pizza base
gluten-free spaghetti
gluten-free teriyaki glaze
goat                        | M
goat cheese                 | D
gochugaru                   | C
gochujang                   | CG
gochujang broth             | CG
gochujang sauce             | CG
gorgonzola                  | D
gram flour batter
grated daikon
Greek yoghurt               | D
green beans
green chillies              | C
green curry paste           | C
green papaya
green plantain
green salad
green tea
grilled beef                | M
grilled chicken             | M
grilled eel                 | F
grilled onions
grilled peppers
grilled pork chop           | P
grilled steak               | M
grilled tomato
gruyere                     | D
guacamole
guanciale                   | P
gyoza dumplings             | G
half chicken                | M
halloumi                    | D
ham                         | P
harissa                     | C
hazelnut chocolate spread   | D
heirloom tomatoes
herbes de Provence
herbs
hoagie roll                 | G
hoisin sauce                | G
hollandaise                 | ED
holy basil
hominy
honey                       | H
honey doughnuts             | GHE
honey glaze                 | H
honey mustard dip           | H
honey syrup                 | H
hot and sour broth
hot dog bun                 | G
hot dog sausage             | P
hot sauce                   | C
hummus
Iberico ham                 | P
Iberico pork                | P
ice cream                   | D
icing sugar
jaew dipping sauce          | CF
jalapenos                   | C
jameed yoghurt sauce        | D
Japanese curry sauce        | G
Japanese mayo               | E
jasmine rice
jasmine tea
jerk marinade               | C
jus                         | M
kaffir lime leaves
kalamata olives
Kashmiri chillies           | C
kefalograviera cheese       | D
ketchup
kidney beans
kimchi                      | CF  | vegan kimchi
kimchi stew                 | CF
king prawns                 | F
kulfi                       | D
lamb                        | M
lamb and beef meatballs     | MGE
lamb chops                  | M
lamb kofta                  | M
lamb mince                  | M
lamb shoulder               | M
lemon
lemon potatoes
lemon sauce
lemon soda
lemon zest
lemon-lime soda
lemongrass
lemongrass beef broth       | M
lemongrass pork             | P
lentils
lettuce
lettuce wraps
lime
lime pepper dip
lime-cured white fish       | F
linguine                    | G   |             | gluten-free linguine
lotus stems
lychee
macaroni                    | G   |             | gluten-free macaroni
madeleines                  | GDE
manchego cheese             | D
mandarin pancakes           | G
mango
mango chutney
mango puree
maple syrup
marinara dip
marinated chicken           | M
masa
mascarpone cream            | DE
massaman curry sauce
matcha ice cream            | D
mayonnaise                  | E   | vegan mayo
milk                        | D
milk dumplings              | DG
milk pudding                | D
minced lamb                 | M
minced pork                 | P   | minced shiitake mushrooms
minced shiitake mushrooms
mint
mint water
mint yoghurt chutney        | D
miso
miso broth
mixed leaves
mochi
mole poblano                | C
mozzarella                  | D   | vegan mozzarella
mung beans
mushroom sauce
mushrooms
mussels                     | F
mustard
mustard seeds
naan bread                  | GD
Nashville hot oil           | C
nigella seeds
nori
nuoc cham                   | F   | vegan nuoc cham
nutmeg
Oaxaca cheese               | D   | vegan cheese
octopus                     | F
octopus balls               | FGE
okra
olive oil
olives
onion
orange juice
orange soda
orange zest
oregano
orzo                        | G
ouzo                        | A
oxtail                      | M
oyster sauce                | F   | mushroom sauce
padron peppers
paella rice
pak choi
pan con tomate              | G
panang curry paste          | C
pandan jelly
paneer                      | D
panko breadcrumbs           | G
parmesan                    | D   | vegan parmesan
parsley
pastry                      | G
pastry shells               | G
pate                        | P   | -
peanut hoisin dip           | G
peanut sauce
pear and soy marinade       | G
pearl onions
peas
pecorino romano             | D
penne                       | G   |             | gluten-free penne
pepper sauce                | C
peppercorn sauce            | D
pepperoni                   | P
peppers
pickled carrot
pickled ginger
pickled mustard greens
pickled papaya
pickled peppers
pickled radish
pickled red onion
pickled turnips
pickled vegetables
pickles
pico de gallo
pine nuts
pineapple
pistachios
plum sauce
pitta bread                 | G
pizza dough                 | G
plant-based patty
poached chicken             | M
poached eggs                | E
poblano peppers
pomegranate
pomegranate molasses
ponzu dip                   | FG
ponzu dressing              | FG  | yuzu soy dressing
porcini mushrooms
pork                        | P
pork and shrimp dumplings   | PFG
pork and shrimp wontons     | PFG
pork belly                  | P
pork bone broth             | P
pork carnitas               | P
pork crackling              | P
pork patties                | P
pork ribs                   | P
pork shoulder               | P
pork skewers                | P
potato bun                  | G
potato chowder              | D
potato gnocchi              | G
potato omelette             | E
potato starch
potatoes
prawn crackers              | F
prawn tempura               | FGE
prawns                      | F
prosciutto                  | P
provolone                   | D
puff pastry                 | GD
pulled pork                 | P
pumpkin
puris                       | G
queso fresco                | D
quince paste
quinoa
rabbit                      | M
radish
raisins
ramen noodles               | G
ranch dip                   | DE
ranchero sauce              | C
rare beef                   | M
red bean paste
red beans
red chilli broth            | C
red chilli sauce            | C
red curry paste             | C
red lentils
red onion
red snapper                 | F
red wine                    | A
refried beans
refried pinto beans
ripe tomatoes
ribeye steak                | M
rice
rice and lentil crepe
rice and peas
rice cakes
rice milk
rice noodles
rice paper
rice paper rolls
rice vermicelli
ricotta                     | D
ricotta cream               | D
risotto balls               | GDE
roast duck                  | M
roast pork                  | P
roasted aubergine
roasted barley tea          | G
roasted cumin
roasted peanuts
roasted red peppers
roasted soybean powder
rocket
romaine lettuce
romesco sauce               | G
root beer
rose syrup
rose water
roti                        | G
roti skin                   | G
rouille                     | E
rum cake                    | GDEA
saffron
saffron fish broth          | F
salmon                      | F
salsa roja                  | C
salsa verde                 | C
salt cod                    | F
salt cod fritters           | FG
salted pork                 | P
sambar
San Marzano tomato
scotch bonnet               | C
scrambled eggs              | E
sea bass                    | F
sea salt
seasonal vegetables
seasoned spinach
seaweed
seaweed rice roll
Serrano ham                 | P
sesame dressing             | G
sesame oil
sesame paste
sesame seeds
seven spice
shallots
shaved milk ice             | D
shaved ribeye               | M
sherry vinegar
shiitake mushrooms
shish tawook                | M
shortcrust pastry           | GD
shoyu chicken broth         | MG
shredded beef               | M
shredded chicken            | M
shredded filo               | G
shrimp                      | F
shrimp dumplings            | FG
Sichuan peppercorns
side salad
silken tofu
sirloin steak               | M
skirt steak                 | M
sliced onion
slow-cooked beef ragu       | M
smashed avocado
smoked bacon                | P
smoked paprika
smoky BBQ sauce
snails                      | M
soft tofu stew
soft-boiled egg             | E
soju                        | A
sorrel
sour cream                  | D   | vegan sour cream
sour orange
sourdough bread             | G   |             | gluten-free bread
sourdough bread bowl        | G
sourdough pizza base        | G   |             | gluten-free pizza base
sourdough toast             | G
soy and pear marinade       | G
soy dipping sauce           | G
soy garlic glaze            | G
soy marinade                | G
soy sauce                   | G   |             | tamari
spaghetti                   | G   |             | gluten-free spaghetti
spam                        | P
sparkling water
spiced basmati rice
spiced minced lamb          | M
spiced potato
spiced potatoes
spicy mayo                  | CE
spicy salami                | PC
spicy tomato sauce          | C
spinach
spinners dumplings          | G
sponge cake                 | GED
spring onion
spring onion pancake        | GE
spring rolls                | G
squid                       | F
ssamjang                    | GC
star anise
steamed rice
sticky rice
still water
strawberry compote
sugar
sugar syrup
sugarcane juice
sultanas
sumac
sushi rice
sushi roll
sweet and sour sauce
sweet cheese                | D
sweet chilli glaze          | C
sweet chilli sauce          | C
sweet gochujang glaze       | CG
sweet plantain
sweet potato
sweet potato fries
sweetcorn
Swiss cheese                | D
tabbouleh                   | G
tahini
tahini dressing
takoyaki sauce              | G
tamari
tamarind
tamarind broth
tamarind chutney
tamarind sauce
tamarind water
tandoori chicken            | MD
tapioca pearls
tare glaze                  | G
tempura batter              | GE
tempura flakes              | G
tentsuyu dip                | FG
teriyaki glaze              | G   |             | gluten-free teriyaki glaze
Thai aubergine
Thai basil
thick hot chocolate         | D
thick rice noodles
three milks                 | D
three-flavour chilli sauce  | CF
thyme
tiger nut milk
tiger prawns                | F
toasted almonds
toasted baguette            | G
toasted brioche             | GDE
toasted rice powder
tofu
tomato
tomato masala sauce
tomato sauce
tomato vegetable broth
tomatoes
tortilla chips
tortilla strips
Toulouse sausage            | P
tuna                        | F
tuna mayo                   | FE
turmeric
turmeric rice crepe
two smashed beef patties    | M
tzatziki                    | D
udon noodles                | G
unagi sauce                 | G
vanilla
vanilla custard             | DE
vanilla gelato              | D
vanilla ice cream           | D
vanilla panna cotta         | D
vegan aioli
vegan basil pesto
vegan bun                   | G
vegan burger sauce
vegan butter
vegan cheddar
vegan cheese
vegan feta
vegan kimchi                | C
vegan mayo
vegan mozzarella
vegan nuoc cham
vegan parmesan
vegan sour cream
vegetable broth
vegetable oil
vermicelli pasta            | G
vermicelli rice             | G
vine leaves
vinegar
waffles                     | GDE
wakame
walnuts
wasabi
water spinach
watercress
watermelon
wheat noodles               | G
whipped cream               | D
white anchovies             | F
white beans
white bread                 | G
white fish                  | F
white wine                  | A
wide rice noodles
wild greens
wood ear mushrooms
yakisoba noodles            | G
yakisoba sauce              | G
yam
yeasted pancakes            | G
yellow lentils
yellowtail                  | F
yoghurt                     | D
yoghurt dip                 | D
yoghurt marinade            | D
yuzu soy dressing           | G
za'atar
`

func parseIngredients(table string) map[string]ingredient {
	out := make(map[string]ingredient)
	for line := range strings.SplitSeq(table, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, "|")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		for len(fields) < 4 {
			fields = append(fields, "")
		}
		if len(fields) > 4 {
			panic(fmt.Sprintf("catalog: malformed ingredient line %q", line))
		}
		name := fields[0]
		if _, dup := out[name]; dup {
			panic(fmt.Sprintf("catalog: duplicate ingredient %q", name))
		}
		parseDiet(fields[1]) // validate
		out[name] = ingredient{f: fields[1], v: fields[2], g: fields[3]}
	}
	return out
}
