const greeting: string = "served by vite in keep";
document.getElementById("title")!.textContent = greeting;
