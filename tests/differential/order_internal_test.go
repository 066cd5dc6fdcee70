package differential

import (
	"fmt"
	"testing"
)

// Objects of a kind are created in the order creation-time ties break
// (ServiceEntries by first host, Services by hostname, the rest by name
// then namespace); the kinds keep their positions.
func TestInTieOrder(t *testing.T) {
	objs, err := parseObjects(`
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a-nets, namespace: app}
spec: {hosts: [nets.example.com], ports: [{number: 3306, name: db}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: b}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: z-mysql, namespace: app}
spec: {hosts: [mysql.example.com], ports: [{number: 3306, name: mysql, protocol: MYSQL}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: a}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: second, namespace: app}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: first, namespace: app}
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range inTieOrder(objs) {
		got = append(got, u.GetKind()+" "+key(u))
	}
	want := []string{"ServiceEntry app/z-mysql", "Service a/web", "ServiceEntry app/a-nets", "Service b/web",
		"VirtualService app/first", "VirtualService app/second"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order:\n got %q\nwant %q", got, want)
	}
}
