// Package cluster runs the end-to-end flow on a 3-master Redis Cluster that scripts/redis-cluster.sh
// starts on free loopback ports, with the real PostgreSQL: two instances sell two screenings whose keys
// live on different masters, and a screening's slot moves to another master mid-sale. The tests need
// redis-server and have the build tag cluster (make test-cluster).
package cluster
