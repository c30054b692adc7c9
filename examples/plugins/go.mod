module github.com/quarrysearch/quarry/examples/plugins

go 1.26.0

require github.com/quarrysearch/quarry/sdk v0.1.0

replace github.com/quarrysearch/quarry/sdk => ../../sdk
