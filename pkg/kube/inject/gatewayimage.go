package inject

// ProxyImage is the image of the proxy container as the templates see it in
// .ProxyImage: <hub>/<global.proxy.image, default proxyv2>:<tag>, retagged
// for imageType (the ProxyConfig's image type, else global.variant; the
// sidecar.istio.io/proxyImageType annotation of annotations wins). The
// gateway deployment controller renders the kube-gateway template with it.
func ProxyImage(v Values, imageType string, annotations map[string]string) string {
	return proxyImage(v, imageType, annotations)
}
