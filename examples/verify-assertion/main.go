package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
)

func main() {
	v := &Verifier{}
	flag.StringVar(&v.JWKSURL, "jwks", "http://127.0.0.1:9090/jwks.json", "Gatehouse's JWKS URL")
	flag.StringVar(&v.Issuer, "issuer", "http://localhost:8080", "Gatehouse's --base-url")
	flag.StringVar(&v.Audience, "audience", "http://localhost:8080", "Gatehouse's --assertion-audience")
	listen := flag.String("listen", "127.0.0.1:3000", "address of this app")
	flag.Parse()
	http.Handle("/", v.Middleware(func(w http.ResponseWriter, r *http.Request, id Identity) {
		fmt.Fprintf(w, "hello %s (user %s, groups %v)\n", id.Email, id.Subject, id.Groups)
	}))
	log.Fatal(http.ListenAndServe(*listen, nil))
}
