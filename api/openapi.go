package api

import (
	_ "embed"
	"fmt"

	"github.com/gofiber/fiber/v2"
	"sigs.k8s.io/yaml"
)

// OpenAPI is the contract as an OpenAPI 3.1 document (docs/API.md "The
// contract, machine-readable"): the one source the tests check every
// request and answer against (internal/contract), and what GET
// /api/v1/openapi.json serves.
//
//go:embed openapi.yaml
var OpenAPI []byte

// openAPIJSON is OpenAPI as JSON, converted once.
var openAPIJSON = func() []byte {
	b, err := yaml.YAMLToJSON(OpenAPI)
	if err != nil {
		panic(fmt.Sprintf("api/openapi.yaml is not YAML: %v", err)) // caught by every test of the package
	}
	return b
}()

// openAPI answers GET /api/v1/openapi.json.
func openAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(openAPIJSON)
}
