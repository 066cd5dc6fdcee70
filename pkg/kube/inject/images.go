package inject

import "strings"

// Image types Istio publishes: a tag ending in one of them is retargeted
// when another type is asked for; "default" means no suffix.
var knownImageTypes = []string{"distroless", "debug"}

// proxyImage is <hub>/<global.proxy.image or proxyv2>:<tag>[-<type>], the
// type from the ProxyConfig image, else global.variant, the pod's
// sidecar.istio.io/proxyImageType annotation overriding both.
func proxyImage(v Values, imageType string, annotations map[string]string) string {
	name := v.String("global", "proxy", "image")
	if name == "" {
		name = "proxyv2"
	}
	return imageURL(v, name, imageType, annotations)
}

// proxyInitImage is the same for global.proxy_init.image.
func proxyInitImage(v Values, annotations map[string]string) string {
	name := v.String("global", "proxy_init", "image")
	if name == "" {
		name = "proxyv2"
	}
	return imageURL(v, name, "", annotations)
}

func imageURL(v Values, name, imageType string, annotations map[string]string) string {
	if imageType == "" {
		imageType = v.String("global", "variant")
	}
	if t, ok := annotations[AnnotationProxyImageType]; ok {
		imageType = t
	}
	return v.String("global", "hub") + "/" + name + ":" + retag(v.String("global", "tag"), imageType)
}

func retag(tag, imageType string) string {
	if imageType == "" {
		return tag
	}
	for _, t := range knownImageTypes {
		if strings.HasSuffix(tag, "-"+t) {
			tag = strings.TrimSuffix(tag, "-"+t)
			break
		}
	}
	if imageType == "default" {
		return tag
	}
	return tag + "-" + imageType
}
