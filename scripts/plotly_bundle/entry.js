'use strict';
// The page's Plotly.js: plotly.js's cartesian bundle (its lib/index-cartesian.js) and scattergl (the embeddings panel's
// vocabulary cloud, drawn with WebGL). A trace type a figure uses must be here: tests/browser/test_plotly_bundle.py.
var Plotly = require('plotly.js/lib/core');

Plotly.register([
    require('plotly.js/lib/bar'),
    require('plotly.js/lib/box'),
    require('plotly.js/lib/heatmap'),
    require('plotly.js/lib/histogram'),
    require('plotly.js/lib/histogram2d'),
    require('plotly.js/lib/histogram2dcontour'),
    require('plotly.js/lib/contour'),
    require('plotly.js/lib/scatterternary'),
    require('plotly.js/lib/violin'),
    require('plotly.js/lib/image'),
    require('plotly.js/lib/pie'),
    require('plotly.js/lib/scattergl'),
    require('plotly.js/lib/calendars'),
]);

module.exports = Plotly;
