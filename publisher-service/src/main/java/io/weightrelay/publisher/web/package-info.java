/** The service's one problem handler and its access policy (which role may call what). */
package io.weightrelay.publisher.web;
