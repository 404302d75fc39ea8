package app

// URLs are where an app answers: its own URL through the Gateway, then
// its domains (https where it has a certificate, or the Gateway serves it
// over TLS), in the order they were added.
func URLs(a *App) []string {
	urls := []string{}
	seen := map[string]bool{}
	add := func(u string) {
		if !seen[u] {
			seen[u] = true
			urls = append(urls, u)
		}
	}
	if r := a.Route; r != nil && r.Host != "" && r.Gateway != "" {
		add(scheme(r.HTTPS) + "://" + r.Host + "/")
	}
	for _, d := range a.Domains {
		path := d.Path
		if path == "" {
			path = "/"
		}
		add(scheme(d.TLSSecret != "") + "://" + d.Host + path)
	}
	return urls
}

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}
