// Build assets/vendor/plotly-cartesian-gl.min.js, as plotly.js builds its own bundles (its esbuild-config.js), from
// entry.js. Needed only when the plotly package (requirements.txt) moves to another plotly.js version: set that
// version in package.json, then
//     cd scripts/plotly_bundle && npm install && node build.js
// (tests/unit/test_plotly_bundle.py fails until the two versions agree).
const path = require('path');
const esbuild = require('esbuild');
const { environmentPlugin } = require('esbuild-plugin-environment');
const { glsl } = require('esbuild-plugin-glsl');
const InlineCSSPlugin = require('esbuild-plugin-inline-css');

const version = require('plotly.js/package.json').version;
const banner = `/**\n* plotly.js (cartesian and scattergl - minified) v${version}\n* Copyright 2012-2026, Plotly, Inc.\n`
    + '* All rights reserved.\n* Licensed under the MIT license\n*/';

esbuild.build({
    entryPoints: [path.join(__dirname, 'entry.js')],
    outfile: path.join(__dirname, '..', '..', 'assets', 'vendor', 'plotly-cartesian-gl.min.js'),
    format: 'iife',
    globalName: 'Plotly',
    bundle: true,
    minify: true,
    legalComments: 'eof',
    banner: { js: banner },
    plugins: [InlineCSSPlugin(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false })],
    alias: { regl: '@plotly/regl', stream: 'stream-browserify' },
    define: { global: 'window', 'define.amd': 'false' },
    target: 'es2016',
    logLevel: 'info',
}).catch(() => process.exit(1));
