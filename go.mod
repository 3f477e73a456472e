module tilecache

go 1.26.8

require (
	go.etcd.io/bbolt v1.5.0
	golang.org/x/crypto v0.58.0
	golang.org/x/image v0.47.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/sys v0.49.0 // indirect
