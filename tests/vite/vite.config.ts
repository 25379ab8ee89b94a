// A TypeScript config: vite bundles it with esbuild (a Go program)
// before the server starts.
import { defineConfig } from "vite";

export default defineConfig({
	server: { host: "127.0.0.1", port: 5173, strictPort: true },
	clearScreen: false,
});
