// expect: none
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 0;
        int i = 0;
        while (i < 100) {
            i++;
            sum += i;
        }
        System.out.println("Expected 5050; computed: " + sum);
    }
}
