// Validates the OpenAPI document at argv[2] against the OpenAPI 3.1
// schema and resolves every $ref (TestOpenAPIValid).
const SwaggerParser = require("@apidevtools/swagger-parser");
SwaggerParser.validate(process.argv[2])
  .then(api => console.log("valid:", api.info.title, api.info.version))
  .catch(e => { console.error(e.message); process.exit(1); });
