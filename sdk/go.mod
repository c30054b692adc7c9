module github.com/quarrysearch/quarry/sdk

go 1.26.0
