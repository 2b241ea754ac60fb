package api

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
)

// The shopper pages: plain HTML, CSS and JavaScript embedded in the
// binary, talking to the public API like any other client. No build step.
//
//go:embed web
var webFiles embed.FS

// DevTools are the helpers that make the shop usable without an identity
// provider or a payment provider. Both are off unless asked for
// (`seckill dev` turns them on); neither belongs on a public deployment.
type DevTools struct {
	// SignIn serves POST /dev/sign-in: a user token for any name typed.
	SignIn bool
	// Checkout serves the dev payment provider's checkout page at
	// /dev/checkout, which pays an order by sending this API a
	// Stripe-style webhook signed with the webhook secret.
	Checkout bool
}

// checkoutPath is where the dev checkout page is served.
const checkoutPath = "/dev/checkout"

func (s *Server) routePages() {
	web, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	s.app.Get("/", s.page(web, "index.html"))
	s.app.Get("/sales/:id", s.page(web, "sale.html"))
	s.app.Use("/assets", filesystem.New(filesystem.Config{Root: http.FS(web), MaxAge: 60}))
	s.app.Get("/ui/config", s.uiConfig)
	if s.cfg.Dev.SignIn {
		s.app.Post("/dev/sign-in", s.demoSignIn)
	}
	if s.cfg.Dev.Checkout {
		s.app.Get(checkoutPath, s.page(web, "checkout.html"))
		s.app.Post(checkoutPath+"/:id", s.authenticate, s.devCheckout)
	}
}

// page serves one embedded HTML file, with headers that keep it from being
// framed or running scripts from anywhere but this site.
func (s *Server) page(web fs.FS, name string) fiber.Handler {
	body, err := fs.ReadFile(web, name)
	if err != nil {
		panic(err)
	}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'self'; frame-ancestors 'none'")
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		c.Set(fiber.HeaderReferrerPolicy, "same-origin")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		c.Type("html", "utf-8")
		return c.Send(body)
	}
}

// uiConfig tells the pages which dev tools exist and which payment
// provider takes the payments.
func (s *Server) uiConfig(c *fiber.Ctx) error {
	checkout := ""
	if s.cfg.Dev.Checkout {
		checkout = checkoutPath
	}
	provider := "dev"
	if s.cfg.Payments != nil {
		provider = s.cfg.Payments.Name()
	}
	return c.JSON(fiber.Map{"demo_sign_in": s.cfg.Dev.SignIn, "checkout_url": checkout, "payment_provider": provider})
}
